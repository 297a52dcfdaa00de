"""The response models' one configuration: camelCase names in JSON, either name accepted,
frozen. Its own module so that every schema module can share it without importing another."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

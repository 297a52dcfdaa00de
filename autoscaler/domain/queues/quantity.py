"""Kubernetes quantities as the integers Kueue counts in (its canonical units).

Kueue counts cpu in millicores and every other resource in whole units (rounded up), so a
quantity becomes one integer: "500m" cpu is 500, "2" GPUs is 2, "8Gi" memory is 8589934592.
The Kueue adapter reads quotas and requests with it.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")
_SCALE: dict[str, Decimal] = {
    "": Decimal(1),
    **{f"{prefix}i": Decimal(1024) ** (n + 1) for n, prefix in enumerate("KMGTPE")},
    **{prefix: Decimal(10) ** (3 * n - 9) for n, prefix in enumerate("num")},
    **{prefix: Decimal(10) ** (3 * (n + 1)) for n, prefix in enumerate("kMGTPE")},
}


def parse_quantity(resource: str, value: str | int | float) -> int:
    """A Kubernetes quantity (int, float or string such as "500m", "8Gi", "1e3")."""
    match = None if isinstance(value, bool) else _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"{resource}: not a quantity: {value!r}")
    number, suffix = match.groups()
    if suffix and len(suffix) > 1 and suffix[0] in "eE":  # an exponent; a lone "E" is exa
        amount = Decimal(number + suffix)
    else:
        amount = Decimal(number) * _SCALE[suffix or ""]
    if resource == "cpu":
        amount *= 1000
    return int(amount.to_integral_value(rounding=ROUND_CEILING))

"""One rule says whether two references name the same object by UID, wherever the Kueue
adapter matches one: an owner read against the Workload's reference (`owner_lists.py`), a
pod's chain against the owner and an intermediate object against the pod's reference
(`ownership.py`). A UID mismatch is another object; an empty UID on either side cannot tell."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autoscaler.adapters.kueue.context import FoundPods
from autoscaler.adapters.kueue.links import Links
from autoscaler.adapters.kueue.owner_lists import same_owner
from autoscaler.adapters.kueue.ownership import PodTree, same_uid
from autoscaler.domain.models import OwnerRef, PodInfo

NS = "team-a"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UID_CASES = [
    pytest.param("u1", "u1", True, id="equal-uids-are-the-same-object"),
    pytest.param("u1", "u2", False, id="a-uid-mismatch-is-another-object"),
    pytest.param("", "u2", True, id="an-empty-uid-on-the-first-side-cannot-tell"),
    pytest.param("u1", "", True, id="an-empty-uid-on-the-second-side-cannot-tell"),
]


@pytest.mark.parametrize(("ref_uid", "found_uid", "same"), UID_CASES)
def test_one_uid_rule_for_owners_chains_and_links(ref_uid: str, found_uid: str, same: bool) -> None:
    assert same_uid(ref_uid, found_uid) is same
    assert same_uid(found_uid, ref_uid) is same

    owner = OwnerRef("jobset.x-k8s.io/v1alpha2", "JobSet", "js", uid=ref_uid)
    read = {"metadata": {"name": "js", "namespace": NS, "uid": found_uid}}
    assert (same_owner(read, owner) is read) is same

    # The pod's controller is a Job whose read object carries `found_uid`; the Job leads to
    # the JobSet. Matched, the pod is the JobSet's; a namesake Job breaks the chain instead.
    job_ref = OwnerRef("batch/v1", "Job", "js-w-0", uid=ref_uid)
    pod = PodInfo("js-w-0-0", "Running", T0, gpus=1, controller=job_ref)
    found = FoundPods()
    found.add(NS, pod)
    links = Links({"Job": {(NS, "js-w-0"): (found_uid, owner)}}, read=frozenset({"Job"}))
    mine, unsure = PodTree(found, links).owned(NS, owner, ("Job",))
    assert ([p.name for p in mine], unsure is None) == (
        (["js-w-0-0"], True) if same else ([], False)
    )

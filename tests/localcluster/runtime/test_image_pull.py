"""We test the local registry's decision (which images can be pulled, given the run images) and
the kubelet's course for a pod whose image cannot be: ErrImagePull, then ImagePullBackOff with
the kubelet's back-off, and the Events it records on each step."""

from __future__ import annotations

import datetime as dt

import pytest

from localcluster.sim.images import pull_error, pull_events, pull_failure, pull_status

T0 = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
S = dt.timedelta(seconds=1)
RUN = ["batchgate:0.3.0", "fixture"]


@pytest.mark.parametrize(("image", "run_images", "pullable"), [
    pytest.param("batchgate:0.3.0", RUN, True, id="a run image is in the registry"),
    pytest.param("batchgate:0.2.0", RUN, False, id="another tag of a run image's repository is not"),
    pytest.param("batchgate", RUN, False, id="the implied latest tag of a run image's repository is not"),
    pytest.param("batchgate@sha256:abc", RUN, False, id="a digest of a run image's repository is not"),
    pytest.param("fixture:7", RUN, True, id="any tag of a run image given without a tag is"),
    pytest.param("envoy:1.30", RUN, True, id="an image of another repository is simulated so pullable"),
    pytest.param("ghcr.io/x/batchgate:0.2.0", RUN, True, id="the same name under another registry is another repository"),
    pytest.param("localhost:5000/app:2", ["localhost:5000/app:1"], False, id="a registry port is not taken for a tag"),
    pytest.param("batchgate:0.2.0", [], True, id="without run images every image is simulated"),
])
def test_which_images_can_be_pulled(image, run_images, pullable):
    assert (pull_error(image, run_images) is None) is pullable


def test_the_pull_error_names_the_image_and_not_found():
    error = pull_error("batchgate:0.2.0", RUN)
    assert error is not None and '"batchgate:0.2.0"' in error and error.endswith("not found")


def pod(*images: str) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


@pytest.mark.parametrize(("after", "stage", "attempt"), [
    pytest.param(0 * S, "ErrImagePull", 0, id="the first attempt fails at once"),
    pytest.param(15 * S, "ImagePullBackOff", 0, id="then the kubelet backs off"),
    pytest.param(25 * S, "ErrImagePull", 1, id="after a 10s back-off it tries again"),
    pytest.param(40 * S, "ImagePullBackOff", 1, id="and backs off twice as long"),
    pytest.param(3600 * S, "ImagePullBackOff", 15, id="an hour on the sixteenth attempt has failed"),
])
def test_a_pod_with_an_unpullable_image_alternates_pull_and_back_off(after, stage, attempt):
    failure = pull_failure(pod("batchgate:0.2.0"), RUN, T0, T0 + after)
    assert failure is not None
    assert (failure.stage, failure.attempt) == (stage, attempt)
    assert failure.since <= T0 + after < failure.next_change


def test_the_back_off_stops_growing_at_five_minutes():
    failure = pull_failure(pod("batchgate:0.2.0"), RUN, T0, T0 + 3600 * S)
    assert failure is not None and failure.next_change - failure.since == 300 * S


def test_a_pod_whose_images_all_pull_has_no_pull_failure():
    assert pull_failure(pod("batchgate:0.3.0", "envoy:1"), RUN, T0, T0) is None


def test_the_status_is_pending_not_ready_and_waits_on_the_bad_container_only():
    p = pod("batchgate:0.2.0", "envoy:1")
    status = pull_status(p, pull_failure(p, RUN, T0, T0 + 15 * S), start_time=T0, host_ip="10.0.0.1", pod_ip="10.244.0.2")
    assert status["phase"] == "Pending"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Ready"] == conditions["ContainersReady"] == "False"
    waiting = [cs["state"]["waiting"] for cs in status["containerStatuses"]]
    assert waiting == [{"reason": "ImagePullBackOff", "message": 'Back-off pulling image "batchgate:0.2.0"'},
                       {"reason": "ContainerCreating"}]


def test_events_are_recorded_on_entering_each_stage_and_only_then():
    p = pod("batchgate:0.2.0")
    pulling, backing_off = pull_failure(p, RUN, T0, T0), pull_failure(p, RUN, T0, T0 + 15 * S)
    assert [(e.type, e.reason) for e in pull_events(p, pulling, None)] == [
        ("Normal", "Pulling"), ("Warning", "Failed"), ("Warning", "Failed")]
    assert pull_events(p, pulling, None)[1].message.startswith('Failed to pull image "batchgate:0.2.0": ')
    assert pull_events(p, pulling, None)[2].message == "Error: ErrImagePull"
    assert [(e.type, e.reason, e.message) for e in pull_events(p, backing_off, "ErrImagePull")] == [
        ("Normal", "BackOff", 'Back-off pulling image "batchgate:0.2.0"'), ("Warning", "Failed", "Error: ImagePullBackOff")]
    assert pull_events(p, backing_off, "ImagePullBackOff") == []

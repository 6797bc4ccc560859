"""Prerequisites are data: each meta.json's ``requires`` lists the workshops to pass first.
They say what the prose used to be read for (the app's next-workshop suggestions are the
same as before, for every workshop and every set of passed ones), and a bad id is a
clear error naming the file and the key."""

import itertools
import json
import re

import pytest

from checks import workspace as ws
from workshops import catalog

EXPECTED = {
    "strided_softmax": (),
    "softmax_backward": (),
    "fused_gemm": (),
    "online_normalizer": (),
    "split_softmax": ("online_normalizer",),
    "streaming_attention": ("fused_gemm", "online_normalizer"),
}


def codes_from_prose(w) -> set:
    """How the prerequisites were read before they were data: the codes before any ';'
    of the prose ("I3 + A1; A2 helpful" -> I3, A1)."""
    return set(re.findall(r"\b([IA]\d)\b", w.prerequisite.split(";")[0]))


def next_from_prose(current, workshops, progress) -> list:
    """The next-workshop suggestions as they were derived from the prose."""
    done = ws.passed_ids(progress) | {current.id}
    done_codes = {w.code for w in workshops if w.id in done}
    ready = [w for w in workshops if w.id not in done and codes_from_prose(w) <= done_codes]
    return sorted(ready, key=lambda w: (current.code not in codes_from_prose(w), workshops.index(w)))


def test_requires_says_what_the_prose_said():
    all_ = catalog.workshops()
    code = {w.id: w.code for w in all_}
    assert {w.id: w.requires for w in all_} == EXPECTED
    for w in all_:
        assert {code[i] for i in w.requires} == codes_from_prose(w), w.id


def test_next_workshops_are_the_same_as_before_for_every_state():
    all_ = catalog.workshops()
    for n in range(len(all_) + 1):
        for passed in itertools.combinations(all_, n):
            progress = {w.id: {"status": "passed"} for w in passed}
            for current in all_:
                assert ws.next_workshops(current, all_, progress) == next_from_prose(
                    current, all_, progress
                ), (
                    current.id,
                    [w.id for w in passed],
                )


def course_copy(tmp_path, monkeypatch, requires: dict):
    """A catalog of meta.json files only, with the given ``requires`` lists."""
    for wid, ids in requires.items():
        (tmp_path / wid).mkdir()
        meta = json.loads((catalog.ROOT / wid / "meta.json").read_text(encoding="utf-8"))
        meta["requires"] = ids
        (tmp_path / wid / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    monkeypatch.setattr(catalog, "ROOT", tmp_path)
    monkeypatch.setattr(catalog, "_CACHE", None)


def test_an_unknown_id_names_the_file_and_the_key(tmp_path, monkeypatch):
    course_copy(tmp_path, monkeypatch, {"online_normalizer": [], "split_softmax": ["online_normaliser"]})
    with pytest.raises(ValueError) as e:
        catalog.workshops()
    said = str(e.value)
    assert str(tmp_path / "split_softmax" / "meta.json") in said
    assert "requires" in said and "'online_normaliser'" in said and "online_normalizer" in said


@pytest.mark.parametrize(
    "requires,bad",
    [
        ({"online_normalizer": ["online_normalizer"]}, "online_normalizer"),
        ({"online_normalizer": ["split_softmax"], "split_softmax": ["online_normalizer"]}, ""),
        ({"online_normalizer": "split_softmax", "split_softmax": []}, "online_normalizer"),
    ],
)
def test_a_cycle_or_a_string_is_an_error(tmp_path, monkeypatch, requires, bad):
    course_copy(tmp_path, monkeypatch, requires)
    with pytest.raises(ValueError, match="requires") as e:
        catalog.workshops()
    assert str(tmp_path / (bad or "")) in str(e.value) and "meta.json" in str(e.value)


def test_a_missing_requires_is_named(tmp_path, monkeypatch):
    course_copy(tmp_path, monkeypatch, {"online_normalizer": []})
    meta = tmp_path / "online_normalizer" / "meta.json"
    meta.write_text(json.dumps({k: v for k, v in json.loads(meta.read_text()).items() if k != "requires"}))
    with pytest.raises(ValueError, match=r"missing \['requires'\]"):
        catalog.workshops()

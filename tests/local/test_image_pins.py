"""An image's pinned package matches the installed version exactly as packaging says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from trainjobs.local.image_packages import pin_matches

release = st.lists(st.integers(0, 3), min_size=1, max_size=4).map(
    lambda parts: ".".join(map(str, parts))
)
suffix = st.sampled_from(["", "a1", "b2", "rc1", ".post1", ".dev0", "rc1.post2.dev3"])
local = st.sampled_from(["", "+cpu", "+cu121", "+CPU.1"])
versions = st.builds(lambda head, tail, label: head + tail + label, release, suffix, local)


@given(versions, versions | st.sampled_from(["not a version", "1.0-legacy!x", ""]))
def test_a_pin_matches_as_packagings_specifier_does(pinned: str, installed: str) -> None:
    expected = SpecifierSet(f"=={pinned}").contains(installed, prereleases=True)
    assert pin_matches(pinned, installed) is expected


def test_a_pin_accepts_a_local_build_and_zero_padding_but_not_another_release() -> None:
    assert pin_matches("2.13.0", "2.13.0+cpu") is True
    assert pin_matches("7.8.1", "7.8.1.0") is True
    assert pin_matches("2.13.0+cpu", "2.13.0") is False
    assert pin_matches("2.13.0+cpu", "2.13.0+cpu") is True
    assert pin_matches("1.22.4", "1.23.5") is False
    assert pin_matches("1.0", "1.0rc1") is False

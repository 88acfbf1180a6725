"""Vowpal Wabbit text read by the compiled reader as Python reads it.

Python's reader (``_vw.full_rows``, ``plain_rows`` and numpy's assembly of
the matrix, tested against hand-made rows in test_readers.py) is the
reference: random lines of the forms the compiled reader takes give the same
rows through both, bit for bit (matrix, labels, importance weights, tags,
line numbers), whatever blocks the input is cut into and whatever crosses
are asked for.
"""

import io
from unittest import mock

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import skftrl._readers._sources as sources
from conftest import needs_numba
from skftrl._readers import _vw

# Bytes of names: ASCII but the separators (space, tab, CR), the line end,
# "|" and ":"; other ASCII whitespace is part of a token.
NAME_BYTES = (
    "".join(chr(c) for c in range(1, 128) if chr(c) not in " \t\r\n|:") + "\x0b\x0c\x1c\x1f"
)
# Names of a few letters (namespaces the crosses name, collisions), and of
# any bytes.
names = st.one_of(
    st.text(st.sampled_from("abc="), min_size=1, max_size=9),
    st.text(st.sampled_from(NAME_BYTES), min_size=1, max_size=13),
)
# Numbers in forms the compiled reader reads (its parser reads at most 15
# digits, powers of ten to 10**22); zeros among them, whose features hold no
# entry.
numbers = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["0", "-0", "0.0", "+2.", ".25", "1e3", "7E-2", "-1.5e-3", "3.125"]),
    # The power of ten, the exponent less the (at most 3) digits after the
    # dot, within -22 to 20.
    st.builds(
        "{}.{}e{}".format, st.integers(-999, 999), st.integers(0, 999), st.integers(-19, 20)
    ),
)
gaps = st.text(st.sampled_from(" \t\r"), min_size=1, max_size=3)


@st.composite
def vw_lines(draw):
    """A line: a head (label, importance weight, tag), then segments of a
    default or named namespace (a weight or none), features with values or
    without, spaces, tabs and CRs between tokens; or a blank line."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", " ", "\t\r", "\r"]))
    head = draw(st.sampled_from(["1", "-1", "0", "0.5", "2"]))
    if draw(st.booleans()):
        head += " " + draw(st.sampled_from(["1", "2", "0", "0.25"]))  # importance weight
    if draw(st.booleans()):  # a tag
        head += draw(st.sampled_from([" ", " '", "\t'"])) + draw(names).lstrip("'")
    else:
        head += draw(st.sampled_from([" ", "\t", " \r"]))  # (a token against "|" is a tag)
    segments = []
    for _ in range(draw(st.integers(0, 5))):
        segment = ""
        if draw(st.booleans()):  # a namespace named, with or without its weight
            segment = draw(names)
            if draw(st.integers(0, 3)) == 0:
                segment += ":" + draw(numbers)
        elif draw(st.booleans()):
            segment = draw(gaps)  # the default namespace
        for _ in range(draw(st.integers(0, 6))):
            feature = draw(names)
            if draw(st.booleans()):
                feature += ":" + draw(numbers)
            segment += draw(gaps) + feature
        segments.append(segment + draw(st.sampled_from(["", " ", "\t"])))
    return head + "|" + "|".join(segments) + draw(st.sampled_from(["", "\r"]))


@st.composite
def vw_files(draw):
    lines = draw(st.lists(vw_lines(), min_size=1, max_size=30))
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))).encode()


def pieces(data, interactions, compiled, block_size):
    """The chunks of VW bytes, each block read by the compiled reader or by Python."""
    with (
        mock.patch.object(_vw, "COMPILED_BYTES", 0 if compiled else 2**62),
        mock.patch.object(sources, "BLOCK_SIZE", block_size),
    ):
        return list(_vw.vw_pieces(io.BytesIO(data), 6, interactions, None))


def assert_read_alike(data, interactions, block_size):
    """The chunks of VW bytes read by the compiled reader are those Python reads."""
    python = pieces(data, interactions, False, block_size)
    compiled = pieces(data, interactions, True, block_size)
    assert len(compiled) == len(python)
    for mine, reference in zip(compiled, python):
        for name in ("indptr", "indices", "data"):  # bit for bit
            assert np.array_equal(getattr(mine.X, name), getattr(reference.X, name)), name
        assert mine.X.shape == reference.X.shape and mine.X.has_canonical_format
        assert np.array_equal(mine.y, reference.y)
        assert np.array_equal(mine.lines, reference.lines)
        assert np.array_equal(mine.sample_weight, reference.sample_weight)
        assert mine.tags.tolist() == reference.tags.tolist()


@needs_numba
@given(
    data=vw_files(),
    interactions=st.lists(st.text(st.sampled_from("abc "), min_size=2, max_size=3), max_size=3),
    block_size=st.integers(1, 200),
)
def test_random_vw_lines_read_by_the_compiled_reader_as_python_reads_them(
    data, interactions, block_size
):
    # Every block of these lines is the compiled reader's.
    parser = _vw.VwParser("t", 6, interactions, labels_required=None)
    assert parser.compiled_rows(_vw.compiled_reader(), 1, data) is not None
    assert_read_alike(data, interactions, block_size)


@st.composite
def lines_of_few_namespaces(draw):
    """Lines whose segments name namespaces of a few names, the most often
    the same at the same place as in the line before (which the compiled
    reader compares rather than hashes), some of them a name's start
    (``a``, ``ab``, ``abc``) or of its length (``ab``, ``ba``)."""
    namespaces = st.sampled_from(["a", "ab", "abc", "ba", "b\x0b", "bb"])
    places = draw(st.lists(namespaces, min_size=1, max_size=4))
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        segments = []
        for place, namespace in enumerate(places):
            if draw(st.integers(0, 3)) == 0:  # another name at this place
                namespace = draw(namespaces)
            if draw(st.integers(0, 4)) == 0:
                namespace += ":" + draw(st.sampled_from(["2", "0.5", "0"]))
            features = draw(st.lists(names, min_size=1, max_size=3))
            segments.append(namespace + " " + " ".join(features) + " ")
            if draw(st.integers(0, 9)) == 0:
                places[place] = draw(namespaces)
        lines.append(draw(st.sampled_from(["1 ", "-1 "])) + "|" + "|".join(segments))
    return ("\n".join(lines) + "\n").encode()


@needs_numba
@given(
    data=lines_of_few_namespaces(),
    interactions=st.lists(st.text(st.sampled_from("ab "), min_size=2, max_size=2), max_size=2),
    block_size=st.integers(20, 400),
)
def test_namespaces_named_as_in_the_line_before_read_by_the_compiled_reader_as_python_reads_them(
    data, interactions, block_size
):
    assert_read_alike(data, interactions, block_size)

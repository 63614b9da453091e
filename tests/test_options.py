"""The one grammar of integer-list options (launchbench/base/options.py)."""
import pytest

from launchbench.base import options
from launchbench.base.errors import UserError


@pytest.mark.parametrize("text, counts", [
    ("0-4", [0, 1, 2, 3, 4]),
    ("0,1,2,3,4", [0, 1, 2, 3, 4]),
    ("0, 1, 2-4", [0, 1, 2, 3, 4]),
    ("0,2,8-10", [0, 2, 8, 9, 10]),
    ("3", [3]),
    ("5-5", [5]),
    ("0,9", [0, 9]),
    ("0 - 2", [0, 1, 2]),
])
def test_counts_read(text, counts):
    assert options.parse_counts(text, "--args", 32) == counts


@pytest.mark.parametrize("text, needle", [
    ("", "--args is empty; give a list like --args 0,1,2,3,4"),
    ("  ", "--args is empty"),
    ("0,,1", "has an empty item"),
    ("0,1,", "has an empty item"),
    ("0,x", "'x' is not a whole number or a LO-HI range"),
    ("2-x", "'2-x' is not a whole number or a LO-HI range"),
    ("1.5", "'1.5' is not a whole number"),
    ("-1", "'-1' is negative"),
    ("4-1", "the range '4-1' runs downwards; write LO-HI, e.g. --args 1-4"),
    ("0,33", "33 is more than 32, the most this command takes; e.g. --args 0"),
    ("0-999999999", "999999999 is more than 32"),
    ("0,1,1", "1 is given twice; name each count once, e.g. --args 0,1"),
    ("0-4,3", "3 is given twice"),
    ("4,0,0", "0 comes after 4; give the counts in ascending order, e.g. --args 0,4"),
    ("3,0,1", "0 comes after 3"),
])
def test_counts_refused_with_one_line(text, needle):
    with pytest.raises(UserError) as exc:
        options.parse_counts(text, "--args", 32)
    message = str(exc.value)
    assert needle in message and "\n" not in message
    assert message.startswith("--args")  # names the option


def test_fix_example_reads_back():
    for text in ("0,1,1", "4,0,0", "0-40", "9,0-4"):
        with pytest.raises(UserError) as exc:
            options.parse_counts(text, "--args", 8)
        example = str(exc.value).rsplit("--args ", 1)[1]
        assert options.parse_counts(example, "--args", 8)


def test_format_counts():
    assert options.format_counts([0, 1, 2, 3, 4, 8, 10, 11]) == "0-4,8,10,11"
    assert options.format_counts([]) == ""


def test_ints():
    assert options.parse_ints("100000,100000,100000,100000,10000", "--loops", 1, 5)[-1] == 10000
    assert options.parse_ints("500", "--loops", 1, 3) == [500, 500, 500]
    assert options.parse_ints("3,1,3", "--loops", 1) == [3, 1, 3]  # any order, repeats allowed
    for text, needle in (("1,2", "2 values for 5 positions"), ("x", "'x' is not a whole number;"),
                         ("0", "0 is less than 1"), ("1-3", "'1-3' is not a whole number"), ("", "is empty"),
                         ("-5", "is negative")):
        with pytest.raises(UserError, match="--loops") as exc:
            options.parse_ints(text, "--loops", 1, 5)
        assert needle in str(exc.value)


def test_no_other_integer_list_parser():
    """One grammar: the parsers it replaced stay gone."""
    from launchbench.commands import mechanisms_cli
    from launchbench.environments import variants
    from launchbench.workloads import argkinds, kernels
    from launchbench.workloads.lcs import fixture as lcs

    for module, name in ((kernels, "parse_arg_counts"), (argkinds, "parse_counts"), (variants, "parse_int_list"),
                         (mechanisms_cli, "parse_arg_counts"), (lcs, "parse_nargs")):
        assert not hasattr(module, name), f"{module.__name__}.{name}"


def test_sets_take_the_same_items_in_any_order():
    assert options.parse_set("7,4-6,4", "--affinity", 15, "6,7") == [4, 5, 6, 7]
    for text, needle in (("cpu7", "'cpu7' is not a whole number or a LO-HI range"), ("3-1", "runs downwards"),
                         ("99", "99 is more than 15"), ("", "--affinity is empty")):
        with pytest.raises(UserError, match="--affinity") as exc:
            options.parse_set(text, "--affinity", 15, "6,7")
        assert needle in str(exc.value)

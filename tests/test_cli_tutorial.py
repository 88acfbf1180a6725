"""The command-line tutorial of docs/cli.rst, run as a reader runs it.

The tutorial's blocks are the ``.. code-block:: console`` blocks marked
``:class: cli-tutorial``. Each ``$`` line is a command (continued on the
next line when it ends with a backslash), the lines under it the output
the docs show. The commands run in order in one empty directory (``skftrl
data data`` writes the files the others read): each must exit 0, and each
line shown must appear in its real output, in the order shown. A
line with ``...`` matches a line of the output where ``...`` stands for any
text; a line that is only ``...`` stands for lines left out.

Commands of ``skftrl`` alone run through ``main()`` in this process; the
others (a pipe, ``head``) in a shell, where ``skftrl`` is this checkout's.
"""

import contextlib
import csv
import io
import os
import re
import shlex
import subprocess
import sys
from importlib.resources import files

from skftrl._cli import main
from skftrl.datasets import make_click_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI_DOCS = os.path.join(ROOT, "docs", "cli.rst")
MARK = ":class: cli-tutorial"


def tutorial_blocks(text):
    """The lines of each marked console block, without their indentation."""
    lines = text.splitlines()
    blocks = []
    for number, line in enumerate(lines):
        if line.strip() != ".. code-block:: console":
            continue
        options = []
        body = number + 1
        while body < len(lines) and lines[body].strip().startswith(":"):
            options.append(lines[body].strip())
            body += 1
        if MARK not in options:
            continue
        block = []
        for line in lines[body:]:
            if line.strip() and not line.startswith("   "):
                break
            block.append(line[3:])
        blocks.append("\n".join(block).strip("\n").splitlines())
    return blocks


def tutorial_steps(text):
    """``(command, shown output lines)`` of the tutorial, in order."""
    steps = []
    for block in tutorial_blocks(text):
        assert block[0].startswith("$ "), block[0]
        continued = False
        for line in block:
            if continued:  # the command goes on from a line that ends with a backslash
                steps[-1] = (steps[-1][0][:-1] + line.strip(), [])
            elif line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
            continued = not steps[-1][1] and steps[-1][0].endswith("\\")
    return steps


def run_step(command, directory, bin_directory):
    """``(exit code, output)`` of ``command`` run in ``directory``."""
    words = shlex.split(command)
    if words[0] == "skftrl" and not set("|<>&;") & set(command):
        out, err = io.StringIO(), io.StringIO()
        previous = os.getcwd()
        os.chdir(directory)
        try:
            with contextlib.redirect_stderr(err):
                try:
                    code = main(words[1:], out=out)
                except SystemExit as exit:  # argparse's usage errors
                    code = exit.code
        finally:
            os.chdir(previous)
        return code, out.getvalue() + err.getvalue()
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "PATH": os.pathsep.join([bin_directory, os.environ["PATH"]]),
    }
    result = subprocess.run(
        ["sh", "-c", command], cwd=directory, env=env, capture_output=True, text=True, timeout=300
    )
    return result.returncode, result.stdout + result.stderr


def shown_line_pattern(line):
    """A shown line as a regular expression of a whole output line."""
    return re.compile(".*".join(re.escape(part) for part in line.rstrip().split("...")))


def missing_lines(shown, output):
    """The shown lines not found in ``output``, in order (an empty list if all are)."""
    lines = [line.rstrip() for line in output.splitlines()]
    position = 0
    for line in shown:
        if line.strip() == "...":
            continue
        pattern = shown_line_pattern(line)
        found = next((n for n in range(position, len(lines)) if pattern.fullmatch(lines[n])), None)
        if found is None:
            return shown[shown.index(line) :]
        position = found + 1
    return []


def test_the_tutorial_blocks_are_the_marked_console_blocks():
    with open(CLI_DOCS, encoding="utf-8") as file:
        text = file.read()
    # Every console block of the page is the tutorial's, so none goes untested.
    assert text.count(".. code-block:: console") == len(tutorial_blocks(text))
    commands = [command for command, _ in tutorial_steps(text)]
    assert commands[0] == "skftrl data data"
    assert any("|" in command for command in commands)  # the pipe from zcat


def test_missing_lines_finds_a_line_the_output_lacks():
    output = "scanned a.svm in 0.2 s: 10 rows\npass 1/1: progressive log loss 0.3351\n"
    assert missing_lines(["scanned a.svm in ...: 10 rows", "..."], output) == []
    assert missing_lines(["pass 1/1: progressive log loss 0.3352"], output) != []
    # In the order shown.
    assert missing_lines(["pass 1/1: ...", "scanned ..."], output) != []


def test_every_command_of_the_tutorial_runs_and_prints_what_the_docs_show(tmp_path):
    with open(CLI_DOCS, encoding="utf-8") as file:
        steps = tutorial_steps(file.read())
    bin_directory = tmp_path / "bin"
    bin_directory.mkdir()
    skftrl = bin_directory / "skftrl"
    skftrl.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m skftrl "$@"\n')
    skftrl.chmod(0o755)
    directory = tmp_path / "tutorial"
    directory.mkdir()
    for command, shown in steps:
        code, output = run_step(command, directory, str(bin_directory))
        assert code == 0, f"$ {command}\n{output}"
        assert missing_lines(shown, output) == [], f"$ {command}\n{output}"


def test_data_writes_the_shipped_a9a_and_the_click_tables_of_a_fixed_seed(tmp_path):
    code, output = run_step("skftrl data out", tmp_path, "")
    assert code == 0, output
    shipped = files("skftrl") / "_data"
    for source, name in [("a9a.gz", "a9a.train.svm.gz"), ("a9a.t.gz", "a9a.test.svm.gz")]:
        assert (tmp_path / "out" / name).read_bytes() == (shipped / source).read_bytes()
    for name, n_rows, seed in [("clicks_train.csv", 20_000, 0), ("clicks_test.csv", 5_000, 1)]:
        with open(tmp_path / "out" / name, newline="") as file:
            rows = list(csv.reader(file))
        table = make_click_table(n_rows, random_state=seed, as_frame=False)
        assert rows[0] == list(table)
        assert rows[1:] == [list(map(str, row)) for row in zip(*table.values())]
    with open(tmp_path / "out" / "clicks_test.vw") as file:
        first = file.readline().rstrip("\n").split(" |")
    table = make_click_table(5_000, random_state=1, as_frame=False)
    assert first[0] == ("1" if table["click"][0] == 1 else "-1")
    assert first[1:] == [f"{name} {table[name][0]}" for name in list(table)[1:]]


def test_data_into_a_path_that_is_a_file_is_an_error(tmp_path):
    (tmp_path / "out").write_text("a file")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["data", str(tmp_path / "out")], out=out)
    assert code == 1
    assert err.getvalue().startswith("skftrl: error: ")
    assert (tmp_path / "out").read_text() == "a file"

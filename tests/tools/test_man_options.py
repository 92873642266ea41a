#!/usr/bin/python3
"""The man pages' options against the binary's --help.

For each command that `khbpf --help` lists, the options of
`khbpf CMD --help` (every -x and --long-option that starts an entry of its
"Options:" section) must be the options of the OPTIONS section of
docs/man/khbpf-CMD.8.rst, no more and no fewer; the "Global options:" of
`khbpf --help` must be the GLOBAL OPTIONS of docs/man/khbpf.8.rst; every
command must have its page, every docs/man/khbpf-*.8.rst page must be a
command's, and the overview's COMMANDS section must name each command.
Each difference is one line naming the page and the option; the exit
status is then 1.

Before that, a self-test feeds the parsers in-memory texts made to break
them: a page that lacks one option and a --help that has one more must
each be reported, and description lines that start with '-', an Examples
section and bullet lists must not be read as options. If the check could
not catch those, it exits 1 too.

The binary is $KHBPF (default build/khbpf; a relative path is taken from
the repository root, which the script changes to). `--self-test` runs the
self-test alone. Run by `make check`.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MAN_DIR = "docs/man"
OVERVIEW = f"{MAN_DIR}/khbpf.8.rst"

# An option as --help and the pages spell it: -x, or --long-option (an =ARG is not part of it).
OPTION = re.compile(r"(-[A-Za-z0-9?]|--[A-Za-z0-9][A-Za-z0-9-]*)(=\S*)?(,?)\Z")
# A section title's underline (or overline) in reStructuredText.
UNDERLINE = re.compile(r"([=\-~^\"'`#*+:.])\1{2,}\Z")


class ParseError(Exception):
    pass


def indent(line):
    return len(line) - len(line.lstrip(" "))


def entry_options(text):
    """The options an entry line starts with: '-d, --duration S  text' gives ['-d', '--duration']."""
    opts = []
    for tok in text.split():
        m = OPTION.match(tok)
        if not m:
            break
        opts.append(m.group(1))
        if not m.group(3):  # no comma: what follows is the argument or the description
            break
    return opts


def entries(lines, deepest):
    """Options of the entry lines among lines: those starting with '-' no deeper than deepest."""
    found = []
    for line in lines:
        text = line.strip()
        if not text.startswith("-") or indent(line) > deepest:
            continue
        if text == "-" or text.startswith("- "):  # a bullet list item, not an option
            continue
        opts = entry_options(text)
        if not opts:
            raise ParseError(f"cannot read an option from the entry '{text}'")
        found.extend(opts)
    return found


# --- --help -------------------------------------------------------------------------------

def help_section(text, heading):
    """The lines under a --help heading ('Options:'), up to the next unindented line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if indent(line) == 0 and line.strip() == heading:
            break
    else:
        raise ParseError(f"no '{heading}' section")
    body = []
    for line in lines[i + 1:]:
        if line.strip() and indent(line) == 0:
            break  # the next heading ('Examples:') or paragraph
        body.append(line)
    if not any(line.strip() for line in body):
        raise ParseError(f"the '{heading}' section is empty")
    return body


def help_options(text, heading="Options:"):
    """Options of a --help section, in order, duplicates kept.

    An entry is `  -d, --duration S      text`, `      --span ARG  text` (a long
    option in the column after a short option's '-x, ', 4 deeper than the
    section's indentation) or `  --json          text` (probe's, at the section's
    own). Description lines continue deeper, at the text's column, and may start
    with '-' themselves (run's `--usdt CMD` lists them`): they are not entries.
    """
    body = help_section(text, heading)
    base = min(indent(line) for line in body if line.strip())
    return entries(body, base + 4)


def help_commands(text):
    body = help_section(text, "Commands:")
    base = min(indent(line) for line in body if line.strip())
    return [line.split()[0] for line in body if line.strip() and indent(line) == base]


# --- the pages (reStructuredText) -----------------------------------------------------------

def rst_section(text, title):
    """The lines of the section titled title (underlined), up to the next section title."""
    lines = text.splitlines()

    def is_title(i):
        return (indent(lines[i]) == 0 and lines[i].strip() and i + 1 < len(lines)
                and UNDERLINE.match(lines[i + 1].rstrip())
                and len(lines[i + 1].rstrip()) >= len(lines[i].rstrip()))

    for i in range(len(lines)):
        if lines[i].strip() == title and is_title(i):
            break
    else:
        raise ParseError(f"no {title} section")
    body = []
    j = i + 2
    while j < len(lines) and not is_title(j):
        body.append(lines[j])
        j += 1
    if not any(line.strip() for line in body):
        raise ParseError(f"the {title} section is empty")
    return body


def rst_options(text, title="OPTIONS"):
    """Options of the entries of a page's section: option list or definition list items,
    each starting with the options as --help spells them (`-d, --duration S`), at the
    section's own indentation; their descriptions are indented deeper."""
    body = rst_section(text, title)
    base = min(indent(line) for line in body if line.strip())
    return entries(body, base)


def rst_commands(text):
    """The commands the overview's COMMANDS section describes: its `**name**` terms."""
    body = rst_section(text, "COMMANDS")
    base = min(indent(line) for line in body if line.strip())
    return [m.group(1) for line in body if indent(line) == base
            for m in [re.match(r"\*\*([a-z][a-z0-9-]*)\*\*\s*\Z", line.strip())] if m]


# --- comparing ----------------------------------------------------------------------------

def compare_options(page, what, in_help, in_page):
    """One line per difference between the options of a --help section and a page's."""
    out = []
    for o in sorted(set(in_help) - set(in_page)):
        out.append(f"{page}: {o} is in '{what}' but not in the page")
    for o in sorted(set(in_page) - set(in_help)):
        out.append(f"{page}: {o} is in the page but not in '{what}'")
    for o in sorted({o for o in in_page if in_page.count(o) > 1}):
        out.append(f"{page}: {o} has more than one entry in the page")
    return out


def page_of(cmd):
    return f"{MAN_DIR}/khbpf-{cmd}.8.rst"


def compare_commands(commands, pages, overview_commands):
    """commands: those `khbpf --help` lists; pages: the khbpf-*.8.rst paths there are;
    overview_commands: those khbpf.8.rst's COMMANDS section names."""
    out = []
    for cmd in commands:
        if page_of(cmd) not in pages:
            out.append(f"{page_of(cmd)}: no such page for '{cmd}', which 'khbpf --help' lists")
        if cmd not in overview_commands:
            out.append(f"{OVERVIEW}: COMMANDS does not name '{cmd}', which 'khbpf --help' lists")
    for page in sorted(pages):
        cmd = os.path.basename(page)[len("khbpf-"):-len(".8.rst")]
        if cmd not in commands:
            out.append(f"{page}: a page for '{cmd}', which 'khbpf --help' does not list")
    for cmd in overview_commands:
        if cmd not in commands:
            out.append(f"{OVERVIEW}: COMMANDS names '{cmd}', which 'khbpf --help' does not list")
    return out


# --- the self-test: texts made to break the check ------------------------------------------

SELF_HELP = """\
Usage: khbpf demo [--duration S] [-o FILE] -- CMD [ARGS...]

What demo does; --not-an-option in a paragraph is not an option.

Options:
      --no-children     CMD's own process only
  -d, --duration S      end the window early
  -o, --output FILE     write the JSON evidence document to FILE
      --span [OBJ:]SYM[=metric]  also measure calls of SYM (glob) in CMD or
                        a library it links; repeatable
      --usdt-span [OBJ:]PROVIDER:START,DONE[=metric]  spans from USDT probes
                        (OBJ: default CMD and its libraries; `khbpf list
                        --usdt CMD` lists them); repeatable
      --container-names FILE
                        -- a description that starts with dashes
      --key METRIC=argN:str|int  split METRIC by argument N
      --wakers          --blocked, and who woke each thread
  -h, --help            this help

Examples:
  sudo khbpf demo --example-only -d 10 -- make
  --also-not-an-option
"""

SELF_WANT = ["--no-children", "-d", "--duration", "-o", "--output", "--span", "--usdt-span",
             "--container-names", "--key", "--wakers", "-h", "--help"]

SELF_PAGE = """\
=========
khbpf-demo
=========

:Manual section: 8

DESCRIPTION
===========

--not-an-option at the start of a line of DESCRIPTION.

OPTIONS
=======

--no-children
    CMD's own process only.

-d, --duration S
    End the window early.

-o, --output FILE
    Write the document.

--span [OBJ:]SYM[=metric]
    Also measure calls of SYM:

    - a bullet in a description
    -x-like text indented in a description

--usdt-span [OBJ:]PROVIDER:START,DONE[=metric]
    Spans from USDT probes.

--container-names FILE
    Names.

--key METRIC=argN:str|int
    Split METRIC.

--wakers  --blocked, and who woke each thread.

-h, --help
    This help.

EXAMPLES
========

--example-only
    Not an option of the page.
"""

PROBE_STYLE_HELP = """\
Options:
  --json          machine output
  -o, --output F  write the JSON output to F
  -h, --help      this help

Examples:
  sudo khbpf probe --json
"""


def self_test():
    """Empty when the parsers read the sample texts right and catch each made-up fault."""
    fails = []

    def expect(name, got, want):
        if got != want:
            fails.append(f"{name}: got {got}, expected {want}")

    expect("--help entries", help_options(SELF_HELP), SELF_WANT)
    expect("page entries", rst_options(SELF_PAGE), SELF_WANT)
    expect("probe-style --help", help_options(PROBE_STYLE_HELP),
           ["--json", "-o", "--output", "-h", "--help"])
    expect("same options", compare_options("p.rst", "khbpf demo --help", SELF_WANT, SELF_WANT), [])

    # A page without one entry (--key, in the middle), and one without -d's short form.
    no_key = SELF_PAGE.replace("--key METRIC=argN:str|int\n    Split METRIC.\n\n", "")
    expect("page missing --key",
           compare_options("p.rst", "khbpf demo --help", help_options(SELF_HELP), rst_options(no_key)),
           ["p.rst: --key is in 'khbpf demo --help' but not in the page"])
    no_short = SELF_PAGE.replace("-d, --duration S\n", "--duration S\n")
    expect("page missing -d",
           compare_options("p.rst", "khbpf demo --help", help_options(SELF_HELP), rst_options(no_short)),
           ["p.rst: -d is in 'khbpf demo --help' but not in the page"])

    # A --help with one option more than the page, and a page with one more than --help.
    extra = SELF_HELP.replace("Options:\n", "Options:\n      --extra N         one more\n")
    expect("--help with --extra",
           compare_options("p.rst", "khbpf demo --help", help_options(extra), rst_options(SELF_PAGE)),
           ["p.rst: --extra is in 'khbpf demo --help' but not in the page"])
    more = SELF_PAGE.replace("-h, --help\n", "--more\n    More.\n\n-h, --help\n")
    expect("page with --more",
           compare_options("p.rst", "khbpf demo --help", help_options(SELF_HELP), rst_options(more)),
           ["p.rst: --more is in the page but not in 'khbpf demo --help'"])
    twice = SELF_PAGE.replace("-h, --help\n", "--json\n    Once.\n\n--json\n    Twice.\n\n-h, --help\n")
    expect("page with an entry twice",
           compare_options("p.rst", "khbpf demo --help", SELF_WANT + ["--json"], rst_options(twice)),
           ["p.rst: --json has more than one entry in the page"])

    # An entry the parser cannot read must stop it, not vanish.
    try:
        rst_options(SELF_PAGE.replace("--no-children\n", "-- no-children\n"))
        fails.append("an unreadable entry was not reported")
    except ParseError:
        pass

    # Commands: a missing page, a page of no command, a command COMMANDS leaves out.
    cmds = ["run", "list"]
    expect("commands and pages", compare_commands(cmds, {page_of("run"), page_of("list")}, cmds), [])
    expect("missing page", compare_commands(cmds, {page_of("run")}, cmds),
           [f"{page_of('list')}: no such page for 'list', which 'khbpf --help' lists"])
    expect("page of no command",
           compare_commands(cmds, {page_of("run"), page_of("list"), page_of("old")}, cmds),
           [f"{page_of('old')}: a page for 'old', which 'khbpf --help' does not list"])
    expect("COMMANDS without list", compare_commands(cmds, {page_of("run"), page_of("list")}, ["run"]),
           [f"{OVERVIEW}: COMMANDS does not name 'list', which 'khbpf --help' lists"])
    expect("help commands", help_commands("Commands:\n  run      a\n  list     b\n\nGlobal options:\n"),
           ["run", "list"])
    return fails


# --- the check ------------------------------------------------------------------------------

def run_help(khbpf, args):
    try:
        r = subprocess.run([khbpf, *args, "--help"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        sys.exit(f"test_man_options: cannot run {khbpf}: {e.strerror}; build it (make) or set KHBPF")
    if r.returncode != 0 or not r.stdout:
        sys.exit(f"test_man_options: '{' '.join([khbpf, *args, '--help'])}' exited "
                 f"{r.returncode}: {r.stderr.strip()}")
    return r.stdout


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parsed(where, parse, *args):
    """parse(*args), its ParseError naming where the text came from."""
    try:
        return parse(*args)
    except ParseError as e:
        raise ParseError(f"{where}: {e}") from None


def check(khbpf):
    """(differences, number of commands, number of options compared)."""
    out = []
    top = run_help(khbpf, [])
    commands = parsed("khbpf --help", help_commands, top)
    glob_help = parsed("khbpf --help", help_options, top, "Global options:")
    pages = set(glob.glob(f"{MAN_DIR}/khbpf-*.8.rst"))
    if not os.path.exists(OVERVIEW):
        out.append(f"{OVERVIEW}: no such page (the overview)")
        overview_commands = commands
    else:
        overview = read(OVERVIEW)
        overview_commands = parsed(OVERVIEW, rst_commands, overview)
        glob_page = parsed(OVERVIEW, rst_options, overview, "GLOBAL OPTIONS")
        out += compare_options(OVERVIEW, "khbpf --help", glob_help, glob_page)
    out += compare_commands(commands, pages, overview_commands)
    n_opts = len(set(glob_help))
    for cmd in commands:
        in_help = parsed(f"khbpf {cmd} --help", help_options, run_help(khbpf, [cmd]))
        n_opts += len(set(in_help))
        if page_of(cmd) in pages:
            in_page = parsed(page_of(cmd), rst_options, read(page_of(cmd)))
            out += compare_options(page_of(cmd), f"khbpf {cmd} --help", in_help, in_page)
    return out, len(commands), n_opts


def main():
    os.chdir(ROOT)
    try:
        fails = self_test()
    except ParseError as e:
        fails = [f"a sample text did not parse: {e}"]
    if fails:
        for f in fails:
            print(f"test_man_options: self-test: {f}", file=sys.stderr)
        print("test_man_options: the self-test failed: the check cannot be trusted", file=sys.stderr)
        return 1
    if sys.argv[1:] == ["--self-test"]:
        print("man options: self-test passed")
        return 0
    if sys.argv[1:]:
        print(f"usage: {sys.argv[0]} [--self-test]", file=sys.stderr)
        return 2
    khbpf = os.environ.get("KHBPF") or "build/khbpf"
    try:
        diffs, n_cmds, n_opts = check(khbpf)
    except ParseError as e:
        print(f"test_man_options: {e}", file=sys.stderr)
        return 1
    if diffs:
        for d in diffs:
            print(d)
        return 1
    print(f"man options: {n_cmds} commands, {n_opts} options, same in --help and the pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())

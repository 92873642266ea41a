#!/bin/bash
# tools/khbpf.bash-completion against the binary's own --help. Sources
# bash-completion's bash_completion and the completion file in this
# (non-interactive) bash and calls the function `complete -p khbpf` names with
# COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT set as readline would.
# Checks: `khbpf <TAB>` offers exactly the commands `khbpf --help` lists;
# `khbpf --<TAB>` and `khbpf CMD --<TAB>`, for every command, exactly the
# long options of the matching --help; --counter-events, --span-links and
# serve --by their values; `attach --pid` this shell's pid; `report` *.json
# files and not others; `list` and -o files; a number argument nothing;
# `run -- ec<TAB>` echo, and after `run --` the options of the command
# there, not run's. Run by `make check`.
#
# KHBPF: the binary under test (default build/khbpf); the completion runs
# `khbpf` from PATH, so a temporary directory with a khbpf symlink to it goes
# first on PATH. KHBPF_COMPLETION: the completion file (default the one in
# tools/). BASH_COMPLETION: bash-completion's main file (default Debian's).
# Prints a line per failed check and the count of those passed; exits 1 if
# any failed.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Relative paths: from the current directory, else from the top of the tree.
abspath()
{
	if [[ $1 == /* ]]; then
		printf '%s\n' "$1"
	elif [[ -e $1 ]]; then
		printf '%s\n' "$PWD/$1"
	else
		printf '%s\n' "$top/$1"
	fi
}

KHBPF=$(abspath "${KHBPF:-build/khbpf}")
completion=$(abspath "${KHBPF_COMPLETION:-tools/khbpf.bash-completion}")
bash_completion=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}

passed=0
failed=0

fail()
{
	printf 'FAIL: %s\n' "$*"
	failed=$((failed + 1))
}

pass()
{
	passed=$((passed + 1))
}

[[ -x $KHBPF ]] || fail "$KHBPF: no such executable (KHBPF)"
[[ -r $completion ]] || fail "$completion: not found (KHBPF_COMPLETION)"
[[ -r $bash_completion ]] || fail "$bash_completion: not found (apt-get install bash-completion)"
if ((failed)); then
	echo "bash completion: $passed checks passed, $failed failed"
	exit 1
fi

tmp=$(mktemp -d)
trap 'cd / && rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/docs"
ln -s "$KHBPF" "$tmp/bin/khbpf"
: >"$tmp/docs/a.json"
: >"$tmp/docs/b.txt"
PATH=$tmp/bin:$PATH

# shellcheck source=/dev/null
source "$bash_completion"
# shellcheck source=/dev/null # checked on its own
source "$completion"

spec=$(complete -p khbpf 2>/dev/null)
func=${spec#* -F }
func=${func%% *}
if [[ $spec != *" -F "* || $(type -t "$func") != function ]]; then
	fail "complete -p khbpf: no completion function registered ('$spec')"
	echo "bash completion: $passed checks passed, $failed failed"
	exit 1
fi
pass

# comp LINE: complete LINE with the cursor at its end; the candidates go to
# got[]. Words split at blanks only: no LINE here holds another character of
# COMP_WORDBREAKS. Anything on stderr but compopt's complaint that readline
# is not completing fails the check.
got=()
comp()
{
	local line=$1 err
	COMP_LINE=$line
	COMP_POINT=${#line}
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *[[:blank:]] ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"$func" khbpf "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>"$tmp/err"
	got=("${COMPREPLY[@]}")
	err=$(grep -v 'compopt: not currently executing completion function' "$tmp/err")
	if [[ $err ]]; then
		fail "'$line<TAB>': stderr: $err"
		return 1
	fi
	return 0
}

# same_set WHAT "EXPECTED..." CANDIDATES...: the candidates, duplicates
# aside, are exactly the expected words.
same_set()
{
	local what=$1 w missing='' extra=''
	local -A want=() have=()
	for w in $2; do want[$w]=1; done
	shift 2
	for w in "$@"; do have[$w]=1; done
	if ((${#want[@]} == 0)); then
		fail "$what: nothing expected: the --help text was not understood"
		return
	fi
	for w in "${!want[@]}"; do [[ ${have[$w]-} ]] || missing+=" $w"; done
	for w in "${!have[@]}"; do [[ ${want[$w]-} ]] || extra+=" $w"; done
	if [[ $missing || $extra ]]; then
		fail "$what:${missing:+ missing$missing;}${extra:+ not expected$extra}"
	else
		pass
	fi
}

# has WHAT WORD CANDIDATES...: WORD is among the candidates.
has()
{
	local what=$1 word=$2 w
	shift 2
	for w in "$@"; do
		if [[ $w == "$word" ]]; then
			pass
			return 0
		fi
	done
	fail "$what: no '$word' among ${#@} candidates: ${*:1:10}"
	return 1
}

# lacks WHAT WORD CANDIDATES...: WORD is not among them.
lacks()
{
	local what=$1 word=$2 w
	shift 2
	for w in "$@"; do
		if [[ $w == "$word" ]]; then
			fail "$what: '$word' offered"
			return 1
		fi
	done
	pass
}

# none WHAT CANDIDATES...: there are none.
none()
{
	local what=$1
	shift
	if (($#)); then
		fail "$what: offered $*"
	else
		pass
	fi
}

# The commands of `khbpf --help`: the first word of each line of its
# "Commands:" section.
commands()
{
	local line on=false
	while IFS= read -r line; do
		if [[ $line == Commands:* ]]; then
			on=true
		elif $on; then
			[[ $line =~ ^[[:blank:]]+([[:alnum:]_-]+) ]] || break
			printf '%s\n' "${BASH_REMATCH[1]}"
		fi
	done < <("$KHBPF" --help)
}

# The long options a --help text ($@: the arguments) lists: the first long
# option of each line indented as an option line (continuation lines are
# indented further).
long_options()
{
	local line
	while IFS= read -r line; do
		[[ $line =~ ^[[:blank:]]{1,8}(-[[:alnum:]],[[:blank:]]+)?(--[[:alnum:]][[:alnum:]-]*) ]] &&
			printf '%s\n' "${BASH_REMATCH[2]}"
	done < <("$KHBPF" "$@" --help)
}

cmds=$(commands)

comp 'khbpf ' && same_set "'khbpf <TAB>' against the commands of khbpf --help" "$cmds" "${got[@]}"
comp 'khbpf --' && same_set "'khbpf --<TAB>' against khbpf --help" "$(long_options)" "${got[@]}"
comp 'khbpf -v ' && has "'khbpf -v <TAB>'" run "${got[@]}"

for cmd in $cmds; do
	comp "khbpf $cmd --" &&
		same_set "'khbpf $cmd --<TAB>' against khbpf $cmd --help" "$(long_options "$cmd")" "${got[@]}"
done

comp 'khbpf run --counter-events ' && same_set "'khbpf run --counter-events <TAB>'" 'hw none sw-cpu-clock' "${got[@]}"
comp 'khbpf attach --span-links ' && same_set "'khbpf attach --span-links <TAB>'" 'auto multi per-site' "${got[@]}"

# serve --by: the completion reads the option's description; expected here
# are the values of the usage line ("[--by cgroup|process]").
by=$("$KHBPF" serve --help | sed -n 's/.*\[--by \([^] ]*\)\].*/\1/p' | tr '|' ' ')
comp 'khbpf serve --by ' && same_set "'khbpf serve --by <TAB>' against serve's usage line" "$by" "${got[@]}"

comp 'khbpf attach --pid ' && has "'khbpf attach --pid <TAB>'" "$$" "${got[@]}"
comp 'khbpf attach -d ' && none "'khbpf attach -d <TAB>' (seconds)" "${got[@]}"

cd "$tmp/docs" || exit 1
comp 'khbpf report ' && has "'khbpf report <TAB>' in a folder of a.json and b.txt" a.json "${got[@]}" &&
	lacks "'khbpf report <TAB>' in a folder of a.json and b.txt" b.txt "${got[@]}"
comp 'khbpf list ' && has "'khbpf list <TAB>' in a folder of a.json and b.txt" b.txt "${got[@]}"
comp 'khbpf run -o ' && has "'khbpf run -o <TAB>' in a folder of a.json and b.txt" b.txt "${got[@]}"
cd "$top" || exit 1

comp 'khbpf run -- ec' && has "'khbpf run -- ec<TAB>'" echo "${got[@]}"
comp 'khbpf run --counter-events none -- ec' && has "'khbpf run --counter-events none -- ec<TAB>'" echo "${got[@]}"
# after `--`, options are the command's own: here khbpf's global ones
comp 'khbpf run -o x.json -- khbpf --' &&
	same_set "'khbpf run -o x.json -- khbpf --<TAB>' against khbpf --help" "$(long_options)" "${got[@]}"
# and a word after `--` is a command's name even when it starts with -
comp 'khbpf run -- --' && none "'khbpf run -- --<TAB>'" "${got[@]}"

if ((failed)); then
	echo "bash completion: $passed checks passed, $failed failed"
	exit 1
fi
echo "bash completion: $passed checks passed"

# aisctl.bash - bash completion for aisctl(1).
#
# Install: source it from ~/.bashrc, or copy it to
# /usr/share/bash-completion/completions/aisctl (`make install` puts it in
# $(PREFIX)/share/bash-completion/completions/).
#
# Completes commands, subcommands and options, and asks the cluster for
# bucket names, object names (after "BUCKET/"), node ids and bucket
# property keys. The candidates come from aisctl itself
# ("aisctl __complete -- CWORD WORD..."), so they follow the command table
# of the aisctl that runs; the --endpoint on the line (or AIS_ENDPOINT, or
# the config file) names the cluster. A cluster that does not answer within
# a few seconds just gives no names.

_aisctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} line prog=${COMP_WORDS[0]}
	local -a out
	COMPREPLY=()
	# the aisctl being completed, if it runs; else the one on PATH
	if ! type -P -- "$prog" >/dev/null 2>&1 && [ ! -x "$prog" ]; then
		prog=aisctl
	fi
	mapfile -t out < <("$prog" __complete -- "$((COMP_CWORD - 1))" "${COMP_WORDS[@]:1}" 2>/dev/null)
	for line in "${out[@]}"; do
		case $line in
		__files__)
			compopt -o filenames 2>/dev/null
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
			;;
		__nospace__)
			compopt -o nospace 2>/dev/null
			;;
		*)
			COMPREPLY+=("$line")
			;;
		esac
	done
	return 0
}

complete -F _aisctl aisctl

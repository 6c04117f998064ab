# %preun of the launchguard .rpm ($1: 0 on erase, 1 on upgrade).
SO=/usr/lib64/slurm/spank_launchguard.so
REFS=/usr/share/launchguard/plugstack-refs
if [ "$1" -eq 0 ]; then
	# The .so goes away with the package: refuse while a plugstack line still loads it, since a
	# `required` line naming a missing .so fails every srun on this node. The package never edits
	# /etc/slurm, so the admin removes the line; then the package can go.
	if [ -x "$REFS" ]; then
		if ! refs=$("$REFS" "$SO"); then
			echo "launchguard: not removed: plugstack still loads $SO, and a plugstack line naming a missing .so fails every srun on this node:" >&2
			printf '%s\n' "$refs" | sed 's/^/launchguard:   /' >&2
			echo "launchguard: delete these lines (or the link to /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf) on this node first, then remove the package again" >&2
			exit 1
		fi
	else
		echo "launchguard: warning: $REFS is missing, plugstack lines naming $SO were not looked for" >&2
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --no-reload disable --now launchguard-agent.service || :
	fi
fi
exit 0

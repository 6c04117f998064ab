# %postun of the launchguard .rpm ($1: 0 on erase, 1 on upgrade).
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || :
	if [ "$1" -ge 1 ]; then
		# Upgrade: a running agent restarts into the new binary.
		systemctl try-restart launchguard-agent.service || :
	fi
fi
if [ "$1" -eq 0 ]; then
	rm -rf /run/launchguard
	# cargo-generate-rpm 0.21 cannot list directories in the package (`dir = true` fails), so the
	# package does not own its directories: remove them when empty (a launchguard.toml.rpmsave stays).
	rmdir /usr/share/launchguard/plugstack.conf.d /usr/share/launchguard/tmpfiles.d /usr/share/launchguard \
		/usr/share/doc/launchguard /usr/share/licenses/launchguard /etc/launchguard 2>/dev/null || :
fi
exit 0

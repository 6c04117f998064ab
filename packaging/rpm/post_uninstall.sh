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
fi
exit 0

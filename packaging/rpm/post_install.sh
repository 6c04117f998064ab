# %post of the launchguard .rpm ($1: 1 on install, 2 on upgrade). It never edits /etc/slurm and
# never enables the agent: both are the admin's steps (docs/install.md).
if command -v systemd-tmpfiles >/dev/null 2>&1; then
	systemd-tmpfiles --create /usr/lib/tmpfiles.d/launchguard.conf || :
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || :
fi
if [ "$1" -eq 1 ]; then
	echo "launchguard: installed; to turn it on, on every node and login node:"
	echo "launchguard:   ln -s /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf /etc/slurm/plugstack.conf.d/"
	echo "launchguard:   systemctl enable --now launchguard-agent.service"
fi

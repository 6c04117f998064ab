/*
 * lgtest_hide.so — a TEST-ONLY SPANK plugin for launchguard's integration tests. Never install it
 * on a real cluster.
 *
 * Listed in plugstack before launchguard, it gives each task a container-like view, the way Pyxis and
 * enroot do, so that launchguard's in-container checks are exercised for real:
 *   hide=/dev/infiniband   moves the task into its own mount namespace and mounts an empty tmpfs over
 *                          the directory (the effect of ENROOT_RESTRICT_DEV=y);
 *   hide=/dev/fakegpu0     the same for one device: an empty regular file is bind-mounted over it
 *                          (a GPU that the container runtime did not mount).
 * It acts in task_init_privileged (root, before any task_init); several hide= may be given.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <slurm/spank.h>

SPANK_PLUGIN(lgtest_hide, 1);

/* A directory gets an empty tmpfs over it; a file gets an empty regular file bind-mounted over it. */
static int hide(const char *path)
{
	static int unshared;
	struct stat st;
	if (!unshared) {
		/* In a chroot "/" is no mount point: stop propagation on /dev instead, so that nothing
		 * mounted here ever reaches the host's /dev. */
		if (unshare(CLONE_NEWNS) || (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) &&
					     mount(NULL, "/dev", NULL, MS_REC | MS_SLAVE, NULL))) {
			slurm_error("lgtest_hide: private mount namespace: %m");
			return -1;
		}
		unshared = 1;
	}
	if (stat(path, &st))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", path, "tmpfs", MS_NOSUID, "mode=0755") == 0)
			return 0;
	} else {
		const char *empty = "/tmp/.lgtest_hide_empty";
		int fd = open(empty, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
		if (mount(empty, path, NULL, MS_BIND, NULL) == 0)
			return 0;
	}
	slurm_error("lgtest_hide: could not hide %s: %m", path);
	return -1;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return 0;
	for (int i = 0; i < ac; i++) {
		if (!strncmp(av[i], "hide=", 5))
			hide(av[i] + 5);
	}
	return 0;
}

/*
 * lgtest_hide.so — a TEST-ONLY SPANK plugin for launchguard's integration tests. Never install it
 * on a real cluster.
 *
 * Listed in plugstack before launchguard, it gives each task a container-like view the way Pyxis and
 * enroot do — in task_init, as the user, through an unprivileged user + mount namespace — so that
 * launchguard's in-container checks (its task_init runs after this one) are exercised for real:
 *   hide=/dev/infiniband   moves the task into its own mount namespace and mounts an empty tmpfs over
 *                          the directory (the effect of ENROOT_RESTRICT_DEV=y);
 *   hide=/dev/fakegpu0     the same for one device: an empty regular file is bind-mounted over it
 *                          (a GPU that the container runtime did not mount).
 * Several hide= may be given. Needs unprivileged user namespaces (not available inside a chroot).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <slurm/spank.h>

SPANK_PLUGIN(lgtest_hide, 1);

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) ? -1 : rc;
}

/* Enters a user namespace (own uid/gid mapped to themselves) and a mount namespace whose mounts never
 * propagate back to the host. */
static int enter_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	/* slurmstepd switched to the user's uid, which clears "dumpable" and leaves /proc/self/*_map
	 * owned by root: set it back so the user may write their own maps. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		slurm_error("lgtest_hide: unshare(user, mount): %m");
		return -1;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/setgroups", "deny") || write_file("/proc/self/uid_map", map))
		goto fail;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map))
		goto fail;
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) &&
	    mount(NULL, "/dev", NULL, MS_REC | MS_SLAVE, NULL))
		goto fail;
	return 0;
fail:
	slurm_error("lgtest_hide: namespace set-up: %m");
	return -1;
}

/* A directory gets an empty tmpfs over it; a file gets an empty tmpfs file bind-mounted over it. */
static int hide(const char *path)
{
	static int entered;
	struct stat st;
	if (!entered) {
		if (enter_namespaces())
			return -1;
		entered = 1;
		/* a private scratch tmpfs for placeholder files */
		if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID, "mode=0700"))
			slurm_error("lgtest_hide: tmpfs on /tmp: %m");
	}
	if (stat(path, &st))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", path, "tmpfs", MS_NOSUID, "mode=0755") == 0)
			return 0;
	} else {
		const char *empty = "/tmp/lgtest_hide_empty";
		int fd = open(empty, O_CREAT | O_WRONLY | O_NOFOLLOW, 0644);
		if (fd >= 0)
			close(fd);
		if (mount(empty, path, NULL, MS_BIND, NULL) == 0)
			return 0;
	}
	slurm_error("lgtest_hide: could not hide %s: %m", path);
	return -1;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return 0;
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "hide=", 5))
			hide(av[i] + 5);
	return 0;
}

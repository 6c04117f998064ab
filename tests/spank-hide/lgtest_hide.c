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
 * Several hide= may be given. And, to reproduce what real Pyxis 0.24 + enroot 4.1 do (measured with
 * tests/tests/real_pyxis.rs):
 *   container              always enters the namespaces, even with nothing to hide: the task's mount
 *                          namespace changes, as when Pyxis joins the container's;
 *   restrict_dev           when the job's environment has ENROOT_RESTRICT_DEV=y (enroot reads it from
 *                          the job through Pyxis), puts a tmpfs over /dev with only null, zero, full,
 *                          urandom, random and tty, as enroot's hooks.d/10-devices.sh does, so GPUs and
 *                          /dev/infiniband are absent; without it enroot bind-mounts the host's /dev and
 *                          every device stays visible;
 *   env=NAME=VALUE         sets NAME in the job's environment with overwrite, as Pyxis imports the
 *                          image's environment (ENV, /etc/environment) in its task_init.
 * Listed before launchguard (40-lgtest-hide.conf) it stands for Pyxis listed first; listed after
 * (60-lgtest-hide.conf) for the order where launchguard's task_init runs before Pyxis's.
 * Needs unprivileged user namespaces (not available inside a chroot).
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
	/* slurmstepd switched to the user's uid, which clears "dumpable" and leaves /proc/self/ *_map
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
static int enter_once(void)
{
	static int entered;
	if (!entered) {
		if (enter_namespaces())
			return -1;
		entered = 1;
		/* a private scratch tmpfs for placeholder files */
		if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID, "mode=0700"))
			slurm_error("lgtest_hide: tmpfs on /tmp: %m");
	}
	return 0;
}

static int hide(const char *path)
{
	struct stat st;
	if (enter_once())
		return -1;
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

/* enroot's ENROOT_RESTRICT_DEV=y: a fresh tmpfs over /dev holding only the basic devices, so GPUs and
 * /dev/infiniband are absent (not empty placeholders) inside the container. */
static int restrict_dev(void)
{
	static const char *keep[] = { "null", "zero", "full", "urandom", "random", "tty", NULL };
	const char *host = "/tmp/lgtest_hostdev";
	char from[128], to[128];
	if (enter_once())
		return -1;
	if (mkdir(host, 0700) || mount("/dev", host, NULL, MS_BIND | MS_REC, NULL) ||
	    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755")) {
		slurm_error("lgtest_hide: restrict_dev: %m");
		return -1;
	}
	for (int i = 0; keep[i]; i++) {
		snprintf(from, sizeof(from), "%s/%s", host, keep[i]);
		snprintf(to, sizeof(to), "/dev/%s", keep[i]);
		int fd = open(to, O_CREAT | O_WRONLY | O_NOFOLLOW, 0644);
		if (fd >= 0)
			close(fd);
		if (mount(from, to, NULL, MS_BIND, NULL))
			slurm_error("lgtest_hide: restrict_dev: bind %s: %m", to);
	}
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return 0;
	for (int i = 0; i < ac; i++) {
		if (!strcmp(av[i], "container")) {
			enter_once();
		} else if (!strncmp(av[i], "hide=", 5)) {
			hide(av[i] + 5);
		} else if (!strcmp(av[i], "restrict_dev")) {
			char v[16] = "";
			if (spank_getenv(sp, "ENROOT_RESTRICT_DEV", v, sizeof(v)) == ESPANK_SUCCESS &&
			    (v[0] == 'y' || v[0] == 'Y' || v[0] == '1'))
				restrict_dev();
		} else if (!strncmp(av[i], "env=", 4)) {
			char name[256];
			const char *kv = av[i] + 4, *eq = strchr(kv, '=');
			if (!eq || (size_t)(eq - kv) >= sizeof(name))
				continue;
			memcpy(name, kv, (size_t)(eq - kv));
			name[eq - kv] = '\0';
			if (spank_setenv(sp, name, eq + 1, 1) != ESPANK_SUCCESS)
				slurm_error("lgtest_hide: cannot set %s", name);
		}
	}
	return 0;
}

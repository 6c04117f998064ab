/*
 * lgtest_opt.so — a TEST-ONLY SPANK plugin for launchguard's integration tests. Never install it
 * on a real cluster.
 *
 * It registers one option, --lgtest-opt, and says in srun when its init runs, so a test can see
 * what Slurm does with a plugin listed twice in plugstack: each copy's init runs, and the second
 * copy's option is disabled ("spank: option "lgtest-opt" provided by both …", shown with srun -v).
 */
#include <stddef.h>

#include <slurm/spank.h>

SPANK_PLUGIN(lgtest_opt, 1);

static int seen(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	if (!remote)
		slurm_info("lgtest_opt: option seen");
	return 0;
}

struct spank_option spank_options[] = {
	{ "lgtest-opt", NULL, "test-only option", 0, 1, (spank_opt_cb_f)seen },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_LOCAL)
		slurm_info("lgtest_opt: init");
	return 0;
}

/* A PMIx client for tests/tests/real_pyxis.rs: what an MPI library's PMIx bootstrap does first
 * (PMIx_Init, the job size from the server's job data, a fence with every rank, PMIx_Finalize),
 * run inside a Pyxis container against Slurm's mpi/pmix server. Prints one line per step; exits 1
 * with PMIx's own error string on the first failure. Built by scripts/pyxis.sh image-pmix. */
#include <pmix.h>
#include <stdio.h>

int main(void)
{
    pmix_proc_t me, job;
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "lgtest_pmix: PMIx_Init failed: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        fprintf(stderr, "lgtest_pmix: rank %u: PMIx_Get(PMIX_JOB_SIZE) failed: %s\n", me.rank,
                PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    rc = PMIx_Fence(NULL, 0, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "lgtest_pmix: rank %u: PMIx_Fence failed: %s\n", me.rank, PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    printf("lgtest_pmix: rank %u of %u: fence ok\n", me.rank, val->data.uint32);
    PMIX_VALUE_RELEASE(val);
    PMIx_Finalize(NULL, 0);
    return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Measurements, not assertions (issue 3): page-fault throughput of coloured
 * vs uncoloured anonymous memory, and the cost of COLOR_MBIND_MIGRATE per
 * page.  Prints "# bench <name> <value>" lines; the TAP checks only say the
 * measurement ran and the migrated pages have allowed colours.
 *
 * Uncoloured memory is madvise(MADV_NOHUGEPAGE)d: coloured ranges use 4 KiB
 * pages only, so the baseline faults 4 KiB pages too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pc_test.h"

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / 4096)
#define REPS	31

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

/* Seconds to fault SIZE bytes of anonymous memory, coloured when set != NULL. */
static double fault_run(const pagecolor_set_t *set)
{
	char *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0, t;

	if (p == MAP_FAILED)
		return -1;
	if (set)
		pagecolor_mbind(p, SIZE, COLOR_MODE_PREFERRED, set, 0);
	else
		madvise(p, SIZE, MADV_NOHUGEPAGE);
	t0 = pc_now();
	pc_touch(p, NPAGES);
	t = pc_now() - t0;
	munmap(p, SIZE);
	return t;
}

int main(void)
{
	double unc[REPS], all[REPS], half[REPS], mig[REPS];
	pagecolor_set_t set_all, set_half;
	int nr, i, ok = 1;

	pc_init(2);
	/*
	 * Under TCG the TSC sometimes fails calibration and the kernel falls
	 * back to jiffies: a 4 ms clock cannot time a 20 ms run.
	 */
	{
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
				"current_clocksource", "r");
		char cs[64] = "";

		if (f) {
			if (!fgets(cs, sizeof(cs), f))
				cs[0] = 0;
			fclose(f);
		}
		if (strstr(cs, "jiffies")) {
			tap_ok(0, "a clock fit to time with (clocksource %.*s)",
			       (int)strcspn(cs, "\n"), cs);
			return tap_finish();
		}
	}
	nr = pagecolor_nr_colors();
	pagecolor_set_fill(&set_all, nr);
	pagecolor_set_zero(&set_half);
	for (i = 0; i < nr / 2; i++)
		pagecolor_set_add(&set_half, i);

	/* interleaved, so drift hits all three alike */
	for (i = 0; i < REPS; i++) {
		unc[i] = fault_run(NULL);
		all[i] = fault_run(&set_all);
		half[i] = fault_run(&set_half);
		if (unc[i] < 0 || all[i] < 0 || half[i] < 0)
			ok = 0;
	}
	tap_ok(ok, "fault throughput measured (%d runs of %lu MiB each)", REPS, SIZE >> 20);
	tap_diag("bench nr_colors %d", nr);
	tap_diag("bench fault_pages_per_s_uncoloured %.0f", NPAGES / median(unc, REPS));
	tap_diag("bench fault_pages_per_s_all_colours %.0f", NPAGES / median(all, REPS));
	tap_diag("bench fault_pages_per_s_half_colours %.0f", NPAGES / median(half, REPS));
	tap_diag("bench ratio_all_colours_vs_uncoloured %.3f", median(unc, REPS) / median(all, REPS));
	tap_diag("bench ratio_half_colours_vs_uncoloured %.3f", median(unc, REPS) / median(half, REPS));

	/* migrate: uncoloured pages present, then bound to half the colours */
	for (i = 0; i < REPS; i++) {
		char *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		double t0;
		int rc;

		madvise(p, SIZE, MADV_NOHUGEPAGE);
		pc_touch(p, NPAGES);
		t0 = pc_now();
		rc = pagecolor_mbind(p, SIZE, COLOR_MODE_PREFERRED, &set_half,
				     COLOR_MBIND_MIGRATE);
		mig[i] = pc_now() - t0;
		if (i == REPS - 1)
			tap_ok(rc == 0 && pc_range_ok(p, NPAGES, &set_half, "migrated"),
			       "migrated pages have allowed colours");
		munmap(p, SIZE);
	}
	tap_diag("bench migrate_us_per_page %.3f", median(mig, REPS) / NPAGES * 1e6);
	return tap_finish();
}

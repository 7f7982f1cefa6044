// SPDX-License-Identifier: GPL-2.0
/*
 * Support probe.  Never skips: on a kernel with page colouring it checks
 * that libpagecolor sees it and agrees with sysfs; on a stock kernel (or
 * with colouring disabled at boot) it checks that libpagecolor reports
 * "unsupported" and that the system calls are not usable.
 * Prints "# probe: supported" or "# probe: unsupported" for the harness.
 */
#include "pc_test.h"

#include <sys/syscall.h>

/* Bytes /proc/self/color_maps gives this process, -1 when it is absent. */
static long color_maps_bytes(void)
{
	char buf[4096];
	long total = 0;
	size_t n;
	FILE *f = fopen("/proc/self/color_maps", "r");

	if (!f)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		total += n;
	fclose(f);
	return total;
}

int main(void)
{
	unsigned long long v;
	struct pagecolor_geometry g;
	int sup, e, sysfs, geo_ok, off_errno;
	const char *off_name;
	long r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pc_page_size = sysconf(_SC_PAGESIZE);
	sysfs = access(PAGECOLOR_SYSFS_DIR, F_OK) == 0;
	errno = 0;
	sup = pagecolor_supported();
	e = errno;
	/* what an unsupported kernel answers: colouring off, or none at all */
	off_errno = sysfs ? EOPNOTSUPP : ENOSYS;
	off_name = sysfs ? "EOPNOTSUPP" : "ENOSYS";
	tap_plan(sup ? 7 : 8);
	geo_ok = pagecolor_geometry(&g) == 0;
	if (geo_ok)
		tap_diag("LLC L%d %lld KiB %d-way line %d, cpus %s -> %d colours",
			 g.level, g.size / 1024, g.ways, g.line_size, g.shared_cpus,
			 g.colors);
	else
		tap_diag("no cache geometry in sysfs (%s)", strerror(errno));
	if (sup) {
		int nr = pagecolor_nr_colors(), mode = -1;
		pagecolor_set_t s;

		printf("# probe: supported\n");
		tap_diag("nr_colors %d", nr);
		tap_ok(sysfs, "sysfs directory exists");
		tap_ok(pagecolor_read_counter("nr_colors", &v) == 0 && (int)v == nr &&
		       nr > 0 && nr <= PAGE_COLOR_MAX_COLORS,
		       "nr_colors from sysfs matches the library (%d)", nr);
		tap_ok(pagecolor_read_counter("enabled", &v) == 0 && v == 1,
		       "enabled reads 1");
		tap_ok(pagecolor_get_policy(&mode, &s, NULL, 0) == 0 &&
		       mode == COLOR_MODE_DEFAULT, "get_color_policy works, default mode");
		tap_ok(pagecolor_page_color(&mode) >= 0, "page colour of the stack readable");
		tap_ok(color_maps_bytes() > 0, "/proc/self/color_maps lists this process's VMAs");
		{
			/* page_colors=N on the command line, else the LLC geometry
			 * rounded down to a power of two, capped, else 32. */
			char cmd[4096] = "", *pcs;
			FILE *f = fopen("/proc/cmdline", "r");
			int want = 0;

			if (f) {
				if (!fgets(cmd, sizeof(cmd), f))
					cmd[0] = '\0';
				fclose(f);
			}
			pcs = strstr(cmd, "page_colors=");
			if (pcs) {
				want = atoi(pcs + 12);
			} else if (geo_ok && g.colors >= 2) {
				want = g.colors > PAGE_COLOR_MAX_COLORS ? PAGE_COLOR_MAX_COLORS : g.colors;
				while (want & (want - 1))
					want &= want - 1;
			} else {
				want = 32;
			}
			tap_ok(nr == want, "nr_colors %d matches %s (%d)", nr,
			       pcs ? "page_colors=" : geo_ok ? "LLC size/(ways*page)" : "the default",
			       want);
		}
	} else {
		printf("# probe: unsupported (%s)\n", strerror(e));
		errno = 0;
		/*
		 * Issue 51: a kernel with colouring switched off answers
		 * EOPNOTSUPP, one without it ENOSYS; the library's wrappers
		 * refuse with the same.
		 */
		tap_ok(pagecolor_page_color(&e) == -1 && errno == off_errno,
		       "pagecolor_page_color() -> %s", off_name);
		tap_ok(e == ENOENT || e == ENODEV || e == ENOSYS || e == EOPNOTSUPP,
		       "pagecolor_supported() == 0 with errno ENOENT/ENODEV/ENOSYS/EOPNOTSUPP (%s)",
		       strerror(e));
		tap_ok(pagecolor_nr_colors() == -1, "pagecolor_nr_colors() == -1");
		errno = 0;
		tap_ok(pagecolor_set_policy(COLOR_MODE_DEFAULT, NULL) == -1 && errno == off_errno,
		       "wrappers refuse with %s", off_name);
		/*
		 * On the 6.1 guest kernel 600-602 are unassigned without the
		 * patch; with the patch and colouring off they answer
		 * EOPNOTSUPP (ENOSYS before issue 51).
		 */
		errno = 0;
		r = pagecolor_sys_get_color_policy(NULL, NULL, 0, 0, 0);
		tap_ok(r == -1 && errno == off_errno,
		       "raw get_color_policy -> %s (%s; got %s)", off_name,
		       sysfs ? "colouring off" : "stock kernel", strerror(errno));
		errno = 0;
		r = pagecolor_sys_set_color_policy(0, NULL, 0);
		tap_ok(r == -1 && errno == off_errno,
		       "raw set_color_policy -> %s (%s; got %s)", off_name,
		       sysfs ? "colouring off" : "stock kernel", strerror(errno));
		errno = 0;
		r = pagecolor_sys_color_mbind(0, 0, 0, NULL, 0, 0);
		tap_ok(r == -1 && errno == off_errno,
		       "raw color_mbind -> %s (%s; got %s)", off_name,
		       sysfs ? "colouring off" : "stock kernel", strerror(errno));
		/* colouring off: the file reports no colours (nor frame bits) */
		r = color_maps_bytes();
		tap_ok(sysfs ? r == 0 : r == -1,
		       "/proc/self/color_maps %s (%ld bytes)",
		       sysfs ? "is empty with colouring off" : "does not exist", r);
	}
	return tap_finish();
}

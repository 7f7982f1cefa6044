// SPDX-License-Identifier: GPL-2.0
/*
 * pagecolor - run a command with a page colour set, show colour maps, show
 * the cache colour geometry.  In the spirit of numactl(8).
 *
 *   pagecolor --colors=0-3 [--preferred] -- cmd args...
 *   pagecolor --show [PID]
 *   pagecolor --hardware
 *   pagecolor --stats
 *   pagecolor --pages PID
 *
 * Exit status: 0 ok, 1 usage / other error, 2 page colouring not supported
 * by the running kernel, 3 the system call failed, 127 exec failed.
 */
#define _GNU_SOURCE
#include "pagecolor.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_USAGE		1
#define EXIT_UNSUPPORTED	2
#define EXIT_SYSCALL		3

static const char *prog = "pagecolor";

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s --colors=LIST [--preferred] [--] COMMAND [ARGS...]\n"
"       %s --show [PID]\n"
"       %s --hardware\n"
"       %s --stats\n"
"       %s --pages PID\n"
"\n"
"  -c, --colors=LIST   run COMMAND with the task default colour set LIST\n"
"                      (e.g. 0-3,8,10-11 or all); strict (bind) mode\n"
"  -p, --preferred     preferred mode: fall back to other colours when the\n"
"                      allowed ones are exhausted\n"
"  -s, --show [PID]    print /proc/PID/color_maps (default: this process)\n"
"  -H, --hardware      show the LLC geometry and kernel support\n"
"  -S, --stats         show /sys/kernel/mm/page_coloring counters\n"
"  -P, --pages PID     the colour of every resident page of PID's anonymous\n"
"                      and shared memory, from /proc/PID/pagemap (root), and\n"
"                      a colour histogram per file mapping\n"
"  -h, --help          this text\n"
"\n"
"Exit status: 0 ok, 1 usage error, 2 page colouring not supported by the\n"
"running kernel, 3 system call failed, 127 COMMAND could not be run.\n",
		prog, prog, prog, prog, prog);
}

static int unsupported(void)
{
	int e = errno;

	if (e == ENODEV)
		fprintf(stderr, "%s: page colouring is disabled in the running kernel "
			"(%s/enabled is 0)\n", prog, PAGECOLOR_SYSFS_DIR);
	else if (e == EOPNOTSUPP)
		fprintf(stderr, "%s: page colouring is switched off in the running "
			"kernel (the system calls answer EOPNOTSUPP)\n", prog);
	else if (e == ENOSYS)
		fprintf(stderr, "%s: page colouring not supported by the running "
			"kernel (%s exists but the system calls answer ENOSYS)\n",
			prog, PAGECOLOR_SYSFS_DIR);
	else
		fprintf(stderr, "%s: page colouring not supported by the running "
			"kernel (no %s)\n", prog, PAGECOLOR_SYSFS_DIR);
	return EXIT_UNSUPPORTED;
}

static int do_hardware(void)
{
	struct pagecolor_geometry g;
	int sup, nr;

	if (pagecolor_geometry(&g) == 0) {
		printf("last-level cache:  L%d, %lld KiB, %d-way, %d-byte lines, "
		       "%d sets\n", g.level, g.size / 1024, g.ways, g.line_size,
		       g.sets);
		printf("shared by cpus:    %s\n", g.shared_cpus[0] ? g.shared_cpus : "?");
		printf("page size:         %ld\n", g.page_size);
		if (g.colors > 0)
			printf("colours (size / (ways * page size)): %d, %lld KiB "
			       "of cache each\n", g.colors,
			       g.size / g.colors / 1024);
		else
			printf("colours:           unknown (incomplete cache info)\n");
	} else {
		printf("last-level cache:  unknown (no /sys/devices/system/cpu/cpu0/cache: %s)\n",
		       strerror(errno));
	}
	sup = pagecolor_supported();
	if (!sup) {
		int e = errno;

		printf("kernel support:    no (%s)\n",
		       e == ENODEV || e == EOPNOTSUPP ? "disabled at boot" :
		       e == ENOSYS ? "system calls answer ENOSYS" :
		       "no " PAGECOLOR_SYSFS_DIR);
		return 0;
	}
	nr = pagecolor_nr_colors();
	printf("kernel support:    yes, %d colours in use\n", nr);
	if (g.colors > 0 && nr > 0 && g.colors != nr)
		printf("note:              kernel colour count differs from the "
		       "geometry (boot parameter or cap)\n");
	return 0;
}

static int do_stats(void)
{
	static const char *names[] = { "enabled", "nr_colors", "colored_allocs",
				       "fallbacks", "refills" };
	unsigned long counts[PAGE_COLOR_MAX_COLORS];
	unsigned long long v;
	size_t i;
	int n, c;

	if (!pagecolor_supported())
		return unsupported();
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (pagecolor_read_counter(names[i], &v) == 0)
			printf("%-16s %llu\n", names[i], v);
		else
			printf("%-16s ? (%s)\n", names[i], strerror(errno));
	}
	n = pagecolor_free_pages(counts, PAGE_COLOR_MAX_COLORS);
	if (n < 0) {
		printf("free_pages       ? (%s)\n", strerror(errno));
		return 0;
	}
	printf("free_pages per colour:\n");
	for (c = 0; c < n; c++)
		printf("%5d: %lu%s", c, counts[c], (c % 8 == 7 || c == n - 1) ? "\n" : "  ");
	return 0;
}

/* Open /proc/PID/NAME (PID digits or "self"); says why on failure. */
static FILE *open_proc(const char *pid, const char *name, char *path, size_t len)
{
	FILE *f;

	if (!*pid || (strspn(pid, "0123456789") != strlen(pid) &&
		      strcmp(pid, "self") != 0)) {
		fprintf(stderr, "%s: bad PID '%s'\n", prog, pid);
		return NULL;
	}
	snprintf(path, len, "/proc/%s/%s", pid, name);
	f = fopen(path, "r");
	if (!f)
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
	return f;
}

static int do_show(const char *pid)
{
	char path[64], line[4096];
	FILE *f;

	if (!pagecolor_supported())
		return unsupported();
	if (!pid)
		pid = "self";
	f = open_proc(pid, "color_maps", path, sizeof(path));
	if (!f)
		return EXIT_USAGE;
	if (strcmp(pid, "self") == 0) {
		int mode;
		pagecolor_set_t s;
		char buf[4096];

		if (pagecolor_get_policy(&mode, &s, NULL, 0) == 0) {
			pagecolor_set_format(&s, buf, sizeof(buf));
			printf("task default: %s %s\n",
			       mode == COLOR_MODE_BIND ? "bind" :
			       mode == COLOR_MODE_PREFERRED ? "preferred" : "default",
			       buf[0] ? buf : "(all)");
		}
	}
	printf("# %s\n", path);
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	fclose(f);
	return 0;
}

/*
 * Anonymous and shared memory (tmpfs, SysV, memfd, shared anonymous) gets a
 * line per page; file mappings only a histogram, their pages are page cache.
 */
static int per_page_vma(const char *path)
{
	static const char *const shm[] = { "/dev/zero", "/SYSV", "/memfd:",
					   "/dev/shm/", "[heap]", "[stack]" };
	size_t i;

	if (!*path)
		return 1;
	for (i = 0; i < sizeof(shm) / sizeof(shm[0]); i++)
		if (strncmp(path, shm[i], strlen(shm[i])) == 0)
			return 1;
	return 0;
}

static int do_pages(const char *pid)
{
	static unsigned long hist[PAGE_COLOR_MAX_COLORS];
	char path[64], line[4096];
	long psz = sysconf(_SC_PAGESIZE);
	int nr;
	FILE *f;

	if (!pagecolor_supported())
		return unsupported();
	nr = pagecolor_nr_colors();
	if (strcmp(pid, "self") == 0) {
		fprintf(stderr, "%s: --pages needs a PID\n", prog);
		return EXIT_USAGE;
	}
	f = open_proc(pid, "maps", path, sizeof(path));
	if (!f)
		return EXIT_USAGE;
	printf("# pages of pid %s, %d colours\n", pid, nr);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		int name = 0, per_page, c;
		size_t i, n;
		uint64_t *pfns;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &name) < 2)
			continue;
		if (strcmp(line + name, "[vsyscall]") == 0 ||
		    strcmp(line + name, "[vvar]") == 0)
			continue;
		n = (end - start) / psz;
		pfns = calloc(n, sizeof(*pfns));
		if (!pfns) {
			fclose(f);
			fprintf(stderr, "%s: out of memory\n", prog);
			return EXIT_USAGE;
		}
		if (pagecolor_pid_pfns(atoi(pid), start, n, pfns) != 0) {
			fprintf(stderr, "%s: %s/pagemap at %lx: %s\n", prog, pid, start,
				strerror(errno));
			free(pfns);
			fclose(f);
			return EXIT_USAGE;
		}
		printf("vma %s\n", line);
		per_page = per_page_vma(line + name);
		memset(hist, 0, sizeof(hist));
		for (i = 0; i < n; i++) {
			if (!pfns[i])
				continue;
			c = pagecolor_pfn_color(pfns[i], nr);
			if (per_page)
				printf("%lx %llx %d\n", start + i * psz,
				       (unsigned long long)pfns[i], c);
			else
				hist[c]++;
		}
		if (!per_page) {
			printf("hist");
			for (c = 0; c < nr; c++)
				if (hist[c])
					printf(" N%d=%lu", c, hist[c]);
			printf("\n");
		}
		free(pfns);
	}
	fclose(f);
	return 0;
}

static int do_run(const char *list, int preferred, char **argv)
{
	pagecolor_set_t set;
	int nr, mode = preferred ? COLOR_MODE_PREFERRED : COLOR_MODE_BIND;

	if (!pagecolor_supported())
		return unsupported();
	nr = pagecolor_nr_colors();
	if (pagecolor_set_parse(&set, list, nr) != 0) {
		if (errno == ERANGE)
			fprintf(stderr, "%s: colour list '%s' names colours >= %d "
				"(the kernel has %d colours: 0-%d)\n",
				prog, list, nr, nr, nr - 1);
		else
			fprintf(stderr, "%s: bad colour list '%s' (use e.g. 0-3,8,10-11)\n",
				prog, list);
		return EXIT_USAGE;
	}
	if (pagecolor_set_count(&set) == 0) {
		fprintf(stderr, "%s: empty colour list\n", prog);
		return EXIT_USAGE;
	}
	if (pagecolor_set_policy(mode, &set) != 0) {
		int err = errno;

		fprintf(stderr, "%s: set_color_policy: %s%s\n", prog, strerror(err),
			err == EPERM ? " (page colours need CAP_SYS_NICE or "
			"vm.page_color_restrict = 0)" : "");
		return EXIT_SYSCALL;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "%s: cannot run %s: %s\n", prog, argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "colors", required_argument, NULL, 'c' },
		{ "colours", required_argument, NULL, 'c' },
		{ "preferred", no_argument, NULL, 'p' },
		{ "show", no_argument, NULL, 's' },
		{ "hardware", no_argument, NULL, 'H' },
		{ "stats", no_argument, NULL, 'S' },
		{ "pages", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *colors = NULL, *pages = NULL;
	int preferred = 0, show = 0, hw = 0, stats = 0, c;

	if (argv[0]) {
		const char *slash = strrchr(argv[0], '/');

		prog = slash ? slash + 1 : argv[0];
	}
	/* '+': stop at the first non-option (the command). */
	while ((c = getopt_long(argc, argv, "+c:psHSP:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': colors = optarg; break;
		case 'p': preferred = 1; break;
		case 's': show = 1; break;
		case 'H': hw = 1; break;
		case 'S': stats = 1; break;
		case 'P': pages = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (show + hw + stats + (colors != NULL) + (pages != NULL) != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (hw)
		return optind == argc ? do_hardware() : (usage(stderr), EXIT_USAGE);
	if (stats)
		return optind == argc ? do_stats() : (usage(stderr), EXIT_USAGE);
	if (pages)
		return optind == argc ? do_pages(pages) : (usage(stderr), EXIT_USAGE);
	if (show) {
		if (argc - optind > 1) {
			usage(stderr);
			return EXIT_USAGE;
		}
		return do_show(optind < argc ? argv[optind] : NULL);
	}
	if (optind == argc) {
		fprintf(stderr, "%s: --colors needs a command to run\n", prog);
		usage(stderr);
		return EXIT_USAGE;
	}
	return do_run(colors, preferred, argv + optind);
}

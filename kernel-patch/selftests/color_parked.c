// SPDX-License-Identifier: GPL-2.0
/*
 * Parked pages are accounted honestly and bounded (issue 29 item 1).
 *
 * Pages parked in the colour lists are allocated memory, as pages on the
 * per-cpu lists are: they are not in a zone's free pages.  While a child
 * bound to colour 0 (512 pages, or 3/4 of the colour's share when that
 * is less: at 512 colours and more in 1 GiB) holds thousands of them, each zone's free pages in
 * /proc/zoneinfo ("pages free", after vm.stat_refresh folded the per-CPU
 * counters) must equal the free blocks /proc/buddyinfo lists, summed as
 * count << order.  Pages on the per-cpu lists are in neither, so they
 * need no slack; the tolerance (64 pages, the least difference of five
 * samples) covers what the kernel itself allocates between the two
 * reads.  A kernel that counts parked pages free is off by all of them.
 * /proc/vmstat's nr_color_parked must agree with sysfs "parked".
 *
 * A zone holds at most parked_limit ten-thousandths of its managed pages
 * parked (at least one refill block, nr_colors pages): a child bound to
 * one colour touching 3/4 of that colour's share of memory (each of its
 * pages parks nr_colors - 1 others) must never take sysfs "parked" above
 * the sum of the zones' limits, sampled every 2 ms while it runs; once
 * with the default limit (300) and once with 50.  Its pages all have
 * colour 0.  The limit is put back, and the parked pages go back after
 * the child.
 */
#include "pc_test.h"

#include <ctype.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define LIMIT_FILE	"/sys/kernel/mm/page_coloring/parked_limit"
#define LIMIT_DEFAULT	300	/* documented default, page_coloring.rst */
#define FREE_TOLERANCE	64	/* pages, see above */
#define MAX_ZONES	16
#define BLOCK_MAX	1024	/* refill blocks are at most order MAX_ORDER - 1 */

struct zone_free {
	char name[32];
	long long free;		/* zoneinfo "pages free" */
	long long managed;	/* zoneinfo "managed" */
	long long buddy;	/* buddyinfo, sum of count << order */
};

static int nzones;
static struct zone_free zones[MAX_ZONES];

static struct zone_free *zone_named(const char *name)
{
	int i;

	for (i = 0; i < nzones; i++)
		if (!strcmp(zones[i].name, name))
			return &zones[i];
	if (nzones == MAX_ZONES)
		return NULL;
	memset(&zones[nzones], 0, sizeof(zones[0]));
	snprintf(zones[nzones].name, sizeof(zones[0].name), "%s", name);
	return &zones[nzones++];
}

/* Fill zones[] from /proc/zoneinfo and /proc/buddyinfo (node 0 only). */
static int read_zones(void)
{
	struct zone_free *z = NULL;
	char line[512], name[32];
	long long v;
	FILE *f;
	int node;

	nzones = 0;
	f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &node, name) == 2)
			z = node == 0 ? zone_named(name) : NULL;
		else if (z && sscanf(line, " pages free %lld", &v) == 1)
			z->free = v;
		else if (z && sscanf(line, " managed %lld", &v) == 1)
			z->managed = v;
	}
	fclose(f);
	f = fopen("/proc/buddyinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *tok, *save, *counts = strstr(line, "zone");
		int o = 0;

		if (sscanf(line, "Node %d,", &node) != 1 || node || !counts)
			continue;
		strtok_r(counts, " \n", &save);		/* "zone" */
		tok = strtok_r(NULL, " \n", &save);	/* its name */
		z = tok ? zone_named(tok) : NULL;
		if (!z)
			continue;
		for (tok = strtok_r(NULL, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save), o++)
			z->buddy += strtoll(tok, NULL, 10) << o;
	}
	fclose(f);
	return 0;
}

/* The sum over zones of what each may hold parked at @limit. */
static long long parked_caps(long long limit)
{
	long long block = pc_nr_colors < BLOCK_MAX ? pc_nr_colors : BLOCK_MAX;
	long long sum = 0, cap;
	int i;

	if (read_zones())
		return -1;
	for (i = 0; i < nzones; i++) {
		if (!zones[i].managed)
			continue;
		cap = zones[i].managed * limit / 10000;
		sum += cap > block ? cap : block;
	}
	return sum;
}

/*
 * Fork a child bound to colour 0 that touches @npages and reports on
 * @ready (one byte: 0 all of colour 0, 1 not), then waits for @go to
 * close before it exits.
 */
static pid_t bound_child(size_t npages, int *ready_fd, int *go_fd)
{
	int ready[2], go[2];
	pid_t pid;

	if (pipe(ready) || pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		pagecolor_set_t zero = pc_set("0");
		struct pc_check chk;
		char *p, res = 1, c;

		close(ready[0]);
		close(go[1]);
		p = pc_bound_pages("0", npages);
		if (p && !pc_check_range(p, npages, &zero, &chk) && !chk.bad && !chk.absent)
			res = 0;
		if (write(ready[1], &res, 1) != 1)
			_exit(3);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	*ready_fd = ready[0];
	*go_fd = go[1];
	return pid;
}

static int child_done(pid_t pid, int go_fd)
{
	int st = -1;

	close(go_fd);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* (a) free pages in zoneinfo are the free blocks of buddyinfo */
static void honest_free_count(size_t share)
{
	long long parked, diff, best = -1, vm_parked, free_total = 0, buddy_total = 0;
	size_t npages = share * 3 / 4 < 512 ? share * 3 / 4 : 512;
	int ready, go, s, i, refreshed, rounds;
	long blocks = -1;
	char res = 1;
	pid_t pid;

	/*
	 * The child parks pages only by refills, which need a free block of
	 * nr_colors pages: after color_exhaust's process exits at 1,024
	 * colours there may be none for a moment (its pages on the per-cpu
	 * lists), and the child then gets every page by the frame search.
	 * At most five rounds of compaction and waiting.
	 */
	rounds = pc_make_free_blocks(pc_order_of(pc_nr_colors), 2, 5, &blocks, NULL);
	pid = bound_child(npages, &ready, &go);
	if (pid < 0 || read(ready, &res, 1) != 1)
		res = 1;
	parked = pc_parked();
	tap_diag("free blocks of %d pages before the child: %ld after %d rounds",
		 pc_nr_colors, blocks, rounds);
	tap_ok(res == 0 && parked >= 1024, "a child bound to colour 0 with %zu pages (512, "
	       "or 3/4 of the colour's share %zu), all of colour 0 (%s), holds %lld parked "
	       "pages (at least 1024)", npages, share, res ? "no" : "yes", parked);
	for (s = 0; s < 5; s++) {
		refreshed = pc_write_file("/proc/sys/vm/stat_refresh", "1") == 0;
		if (read_zones())
			break;
		diff = 0;
		free_total = buddy_total = 0;
		for (i = 0; i < nzones; i++) {
			long long d = zones[i].free - zones[i].buddy;

			diff += d < 0 ? -d : d;
			free_total += zones[i].free;
			buddy_total += zones[i].buddy;
		}
		if (best < 0 || diff < best)
			best = diff;
		tap_diag("sample %d (stat_refresh %s): zoneinfo free %lld, buddyinfo %lld, "
			 "parked %lld", s, refreshed ? "ok" : "failed", free_total,
			 buddy_total, pc_parked());
	}
	tap_ok(best >= 0 && best <= FREE_TOLERANCE && parked > 4 * FREE_TOLERANCE,
	       "each zone's free pages (zoneinfo) are its free blocks (buddyinfo): off by "
	       "%lld pages over all zones (at most %d), with %lld pages parked", best,
	       FREE_TOLERANCE, parked);
	pc_write_file("/proc/sys/vm/stat_refresh", "1");
	vm_parked = pc_vmstat("nr_color_parked");
	parked = pc_parked();
	tap_ok(vm_parked >= 0 && llabs(vm_parked - parked) <= FREE_TOLERANCE,
	       "/proc/vmstat nr_color_parked %lld is sysfs parked %lld", vm_parked, parked);
	child_done(pid, go);
	close(ready);
}

/* (b) a child bound to one colour never takes "parked" past the limit */
static void limit_round(long long limit, size_t npages)
{
	long long caps = parked_caps(limit), peak = 0, v;
	int ready, go, ok_child;
	struct timespec t0, t1;
	char res = 1;
	pid_t pid;
	ssize_t n;

	pc_wait_parked(1, 5000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = bound_child(npages, &ready, &go);
	/* sample until the child reports (its byte arrives) */
	for (;;) {
		fd_set set;
		struct timeval tv = { 0, 2000 };

		v = pc_parked();
		if (v > peak)
			peak = v;
		FD_ZERO(&set);
		FD_SET(ready, &set);
		if (pid < 0 || select(ready + 1, &set, NULL, NULL, &tv) != 0)
			break;
	}
	n = pid > 0 ? read(ready, &res, 1) : -1;
	v = pc_parked();
	if (v > peak)
		peak = v;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok_child = child_done(pid, go);
	close(ready);
	tap_diag("limit %lld: child touched %zu pages of colour 0 in %.2f s; parked peak "
		 "%lld, limit over the zones %lld", limit, npages,
		 (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, peak, caps);
	tap_ok(n == 1 && res == 0 && ok_child, "limit %lld: the child bound to colour 0 got "
	       "%zu pages, all of colour 0", limit, npages);
	tap_ok(caps > 0 && peak > 0 && peak <= caps, "limit %lld: parked pages never "
	       "above the zones' limits (peak %lld, limit %lld)", limit, peak, caps);
}

int main(void)
{
	long long old_limit = -1, back;
	size_t share;
	char text[32];
	FILE *f;

	pc_init(10);
	if (geteuid() != 0) {
		tap_diag("must run as root (vm.stat_refresh, parked_limit, drain)");
		return tap_finish();
	}
	/* a colour's share of memory, in pages */
	share = pc_color_share();
	honest_free_count(share);

	f = fopen(LIMIT_FILE, "r");
	if (f) {
		if (!fgets(text, sizeof(text), f) || sscanf(text, "%lld", &old_limit) != 1)
			old_limit = -1;
		fclose(f);
	}
	tap_ok(old_limit == LIMIT_DEFAULT, "%s is %d by default (%lld)", LIMIT_FILE,
	       LIMIT_DEFAULT, old_limit);

	/* the child takes 3/4 of the colour's share, then a quarter */
	limit_round(LIMIT_DEFAULT, share * 3 / 4);
	if (old_limit >= 0)
		pc_write_file(LIMIT_FILE, "50");
	limit_round(50, share / 4);
	if (old_limit >= 0) {
		snprintf(text, sizeof(text), "%lld", old_limit);
		pc_write_file(LIMIT_FILE, text);
	}
	back = pc_wait_parked(0, 10000);
	tap_ok(back == 0, "parked pages go back after the last policy (%lld left)", back);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A coloured allocation honours the lowmem reserve (issue 29 item 5).
 *
 * A lower zone keeps lowmem_reserve pages from allocations that could
 * have used a higher zone: the page allocator takes a page there only
 * while the zone's free pages stay above its min watermark plus that
 * reserve ("protection" in /proc/zoneinfo).  Buffered reads of a RAM
 * disk fill memory with clean page cache, which takes the lower zone
 * (ZONE_DMA in a 1 GiB guest) down to about that level; then a child
 * bound to colour 0 touches 3/4 of the colour's share.  Its allocations
 * (GFP_HIGHUSER_MOVABLE: the highest zone is ZONE_MOVABLE) find no free
 * block and walk the colour's frames, highest zone first: the walk must
 * not take the lower zone below min + protection either.  The parent
 * samples each zone's free pages every 10 ms while the child runs; the
 * lowest margin over (unboosted) min + protection, less 16 pages of
 * per-CPU counter drift, must not be negative.  The child gets every
 * page, of colour 0.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define RAMDISK		"/dev/ram0"
#define IDLE_MS		60000
#define DRIFT		16	/* pages: per-CPU vmstat deltas not folded yet */
#define MAX_ZONES	8

struct zone_state {
	char name[16];
	long long free, min, boost, protection;	/* protection: the largest */
};

/* Node 0's populated zones from /proc/zoneinfo; the number read, -1 on error. */
static int read_zones(struct zone_state *z)
{
	char line[512], name[16];
	int n = -1, node;
	long long v;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (sscanf(line, "Node %d, zone %15s", &node, name) == 2) {
			if (node != 0 || n + 1 >= MAX_ZONES)
				break;
			n++;
			memset(&z[n], 0, sizeof(z[n]));
			snprintf(z[n].name, sizeof(z[n].name), "%s", name);
		} else if (n >= 0 && sscanf(line, " pages free %lld", &v) == 1) {
			z[n].free = v;
		} else if (n >= 0 && sscanf(line, " min %lld", &v) == 1) {
			z[n].min = v;
		} else if (n >= 0 && sscanf(line, " boost %lld", &v) == 1) {
			z[n].boost = v;
		} else if (n >= 0 && (p = strstr(line, "protection: ("))) {
			for (p += 13; *p && *p != ')'; p++) {
				v = strtoll(p, &p, 10);
				if (v > z[n].protection)
					z[n].protection = v;
				if (*p == ')')
					break;
			}
		}
	}
	fclose(f);
	return n + 1;
}

/* Free pages over what the reserve needs: min (unboosted) + protection. */
static long long margin(const struct zone_state *z)
{
	return z->free - (z->min - z->boost + z->protection);
}

static void child(size_t n)
{
	pagecolor_set_t s = pc_set("0");
	struct pc_check r;
	size_t i;
	char *p;

	signal(SIGBUS, SIG_DFL);
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED || pagecolor_mbind(p, n * pc_page_size, COLOR_MODE_BIND, &s, 0))
		_exit(20);
	for (i = 0; i < n; i++)
		p[i * pc_page_size] = 1;
	if (pc_check_range(p, n, &s, &r) || r.bad || r.absent)
		_exit(21);
	_exit(0);
}

int main(void)
{
	static char buf[1 << 20];
	struct zone_state z[MAX_ZONES], before[MAX_ZONES];
	long long total_kb, done = 0, low[MAX_ZONES];
	int nz, i, fd, st = -1, samples = 0, low_zone = -1;
	size_t want;
	ssize_t n;
	pid_t pid;

	pc_init(4);
	total_kb = pc_meminfo_kb("MemTotal");
	want = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors) * 3 / 4;

	fd = open(RAMDISK, O_RDONLY);
	if (fd < 0) {
		tap_diag("%s: %s (test.config has CONFIG_BLK_DEV_RAM)", RAMDISK,
			 strerror(errno));
		return tap_finish();
	}
	while (done < total_kb * 1024 * 5 / 4 && (n = read(fd, buf, sizeof(buf))) > 0)
		done += n;
	pc_wait_kswapd_idle(IDLE_MS);
	pc_wait_parked(1, IDLE_MS);
	nz = read_zones(before);
	for (i = 0; i < nz; i++) {
		low[i] = margin(&before[i]);
		tap_diag("before: zone %s free %lld min %lld boost %lld protection %lld "
			 "(margin %lld)", before[i].name, before[i].free, before[i].min,
			 before[i].boost, before[i].protection, low[i]);
		if (before[i].protection > 0 && low_zone < 0)
			low_zone = i;
	}
	tap_ok(done > total_kb * 1024 && low_zone >= 0,
	       "premise: read %lld MiB of %s, and a lower zone keeps a lowmem reserve (%s)",
	       done >> 20, RAMDISK, low_zone >= 0 ? before[low_zone].name : "none");

	pid = fork();
	if (pid == 0)
		child(want);
	for (;;) {
		if (waitpid(pid, &st, WNOHANG) != 0)
			break;
		if (read_zones(z) == nz) {
			samples++;
			for (i = 0; i < nz; i++)
				if (margin(&z[i]) < low[i])
					low[i] = margin(&z[i]);
		}
		usleep(10000);
	}
	close(fd);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the child bound to colour 0 got %zu pages, all of colour 0 (status %#x)",
	       want, st);
	for (i = 0; i < nz; i++)
		tap_diag("zone %s: lowest margin over min + protection %lld (%d samples)",
			 z[i].name, low[i], samples);
	tap_ok(low_zone >= 0 && samples > 0 && low[low_zone] >= -DRIFT,
	       "zone %s never went below min + protection (lowest margin %lld, at most "
	       "%d under allowed)", low_zone >= 0 ? before[low_zone].name : "?",
	       low_zone >= 0 ? low[low_zone] : 0, DRIFT);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}

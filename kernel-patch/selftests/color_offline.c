// SPDX-License-Identifier: GPL-2.0
/*
 * Memory offlining with pages parked in the block (issue 29 item 10).
 * Needs CONFIG_MEMORY_HOTREMOVE and a second NUMA node's CPU or not: the
 * block is taken on the node of CPU 0.
 *
 * A memory block of node 0 that can be offlined (tried from the highest
 * down) is onlined again as ZONE_MOVABLE, the only memory of node 0's
 * Movable zone: a coloured task on node 0 then takes its refill blocks
 * there first (the highest zone), and that zone's nr_color_parked in
 * /proc/zoneinfo counts exactly the pages parked in the block.
 *
 *  1. /sys/devices/system/memory, a block of node 0 offlined and onlined
 *     again as Movable;
 *  2. nothing parked, a child bound to colour COLOR on node 0's CPU
 *     faults NPAGES pages: some are in the block, and the block holds
 *     parked pages (its zone's nr_color_parked);
 *  3. the block goes offline (parked pages of it given back and taken
 *     with it: test_pages_isolated() drains the range): the zone's
 *     nr_color_parked is 0, the global parked count fell by that much,
 *     MemTotal by the block's size;
 *  4. the child's pages (migrated out of the block) keep their contents
 *     (their colours are printed: offlining moves pages to frames of any
 *     colour, as documented);
 *  5. a second child bound to COLOR faults 256 pages: all of the colour,
 *     none in the offlined block, no SIGBUS;
 *  6. the block goes online again; after a drain the zones' free pages in
 *     /proc/zoneinfo are the free blocks /proc/buddyinfo lists (64 pages);
 *  7. no BUG/WARNING in dmesg.
 */
#include "pc_test.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MEM		"/sys/devices/system/memory"
#define NPAGES		2
#define COLOR		11
#define NPAGES2		256

static unsigned long long block_pages;

static long long read_ll(const char *path)
{
	char buf[64];
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 16);
	fclose(f);
	return v;
}

static int set_state(int blk, const char *state)
{
	char path[128];

	snprintf(path, sizeof(path), MEM "/memory%d/state", blk);
	return pc_write_file(path, state);
}

static int block_of(uint64_t pfn)
{
	return (int)(pfn / block_pages);
}

/* nr_color_parked and free pages of zone @zname of node @nid, -1 if absent */
static long long zone_stat(int nid, const char *zname, const char *stat)
{
	char line[256], zone[32], key[64];
	long long v = -1, a;
	int node, in = 0;
	FILE *f;

	pc_stat_refresh();
	f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return -1;
	snprintf(key, sizeof(key), " %s %%lld", stat);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &node, zone) == 2) {
			in = node == nid && !strcmp(zone, zname);
			continue;
		}
		if (in && sscanf(line, key, &a) == 1) {
			v = a;
			break;
		}
	}
	fclose(f);
	return v;
}

/* Largest difference, over zones, of zoneinfo's free pages and buddyinfo's. */
static long long free_mismatch(void)
{
	struct { int node; char name[32]; long long zi, bi; } z[16];
	char line[512], zone[32];
	long long worst = 0, a;
	int node, n = 0, i, cur = -1;
	FILE *f;

	pc_stat_refresh();
	f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &node, zone) == 2) {
			cur = n < 16 ? n++ : -1;
			if (cur >= 0) {
				z[cur].node = node;
				snprintf(z[cur].name, sizeof(z[cur].name), "%s", zone);
				z[cur].zi = z[cur].bi = 0;
			}
		} else if (cur >= 0 && sscanf(line, " pages free %lld", &a) == 1) {
			z[cur].zi = a;
		}
	}
	fclose(f);
	f = fopen("/proc/buddyinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *s;
		int o = 0, k;

		if (sscanf(line, "Node %d, zone %31s%n", &node, zone, &k) != 2)
			continue;
		for (i = 0; i < n; i++)
			if (z[i].node == node && !strcmp(z[i].name, zone))
				break;
		if (i == n)
			continue;
		for (s = line + k; sscanf(s, "%lld%n", &a, &k) == 1; s += k)
			z[i].bi += a << o++;
	}
	fclose(f);
	for (i = 0; i < n; i++)
		if (llabs(z[i].zi - z[i].bi) > worst)
			worst = llabs(z[i].zi - z[i].bi);
	return worst;
}

static int child_cpu;

static void child_fn(void *arg)
{
	char *p;

	(void)arg;
	pc_run_on(child_cpu);
	p = pc_child_bound_touch("11", NPAGES, 1);
	memset(p, 0x3c, NPAGES * pc_page_size);
}

static char *child_addr(pid_t pid, size_t npages)
{
	return pc_bound_vma(pid, "11", npages);
}

static long damaged(pid_t pid, char *addr)
{
	char path[64], buf[4096];
	long bad = 0;
	size_t i, j;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	f = fopen(path, "r");
	if (!f || fseek(f, (long)(uintptr_t)addr, SEEK_SET))
		bad = -1;
	for (i = 0; bad >= 0 && i < NPAGES; i++) {
		if (fread(buf, 1, sizeof(buf), f) != sizeof(buf)) {
			bad = -1;
			break;
		}
		for (j = 0; j < sizeof(buf); j++)
			bad += buf[j] != 0x3c;
	}
	if (f)
		fclose(f);
	return bad;
}

int main(void)
{
	uint64_t pfns[NPAGES], *pfns2;
	long long zparked, parked0, parked1, total0, total1, zp1, worst;
	int trouble, blk = -1, i, nblk = 0, in = 0, rc, off, inblk, st;
	char path[128], *addr = NULL;
	pid_t pid, pid2;
	long bad;

	pc_init(8);
	trouble = pc_dmesg_trouble();
	block_pages = read_ll(MEM "/block_size_bytes");
	child_cpu = pc_node_cpu(0);
	if (block_pages == (unsigned long long)-1 || child_cpu < 0) {
		tap_ok(0, "%s/block_size_bytes readable, node 0 has a CPU", MEM);
		return tap_finish();
	}
	block_pages /= pc_page_size;
	for (i = 0; ; i++) {
		snprintf(path, sizeof(path), MEM "/memory%d", i);
		if (access(path, F_OK))
			break;
		nblk++;
	}
	/* 1: from the highest block of node 0 down, one that goes offline */
	for (i = nblk - 1; i > 0; i--) {
		snprintf(path, sizeof(path), MEM "/memory%d/node0", i);
		if (access(path, F_OK))
			continue;
		if (!set_state(i, "offline")) {
			blk = i;
			break;
		}
	}
	rc = blk >= 0 ? set_state(blk, "online_movable") : -1;
	tap_ok(blk >= 0 && !rc && zone_stat(0, "Movable", "managed") > 0,
	       "memory block %d (of %d, %llu pages each) of node 0 offlined and onlined "
	       "as Movable (managed %lld): %s", blk, nblk, block_pages,
	       zone_stat(0, "Movable", "managed"), rc ? strerror(errno) : "ok");
	if (blk < 0 || rc)
		return tap_finish();

	/* 2 */
	pc_wait_parked(1, 30000);
	pid = pc_start_holder(child_fn, NULL);
	addr = pid > 0 ? child_addr(pid, NPAGES) : NULL;
	if (addr && !pagecolor_pid_pfns(pid, (uintptr_t)addr, NPAGES, pfns))
		for (i = 0; i < NPAGES; i++)
			in += block_of(pfns[i]) == blk;
	zparked = zone_stat(0, "Movable", "nr_color_parked");
	tap_ok(addr && in > 0 && zparked > 0, "bound to colour %d on cpu %d: %d of %d "
	       "pages in block %d, %lld pages parked in it", COLOR, child_cpu, in,
	       NPAGES, blk, zparked);

	/* 3 */
	parked0 = pc_vmstat("nr_color_parked");
	total0 = pc_meminfo_kb("MemTotal");
	rc = set_state(blk, "offline");
	pc_stat_refresh();
	parked1 = pc_vmstat("nr_color_parked");
	total1 = pc_meminfo_kb("MemTotal");
	/* an emptied zone: zoneinfo prints no counters for it (-1), none held */
	zp1 = zone_stat(0, "Movable", "nr_color_parked");
	if (zp1 < 0 && zone_stat(0, "Movable", "managed") == 0)
		zp1 = 0;
	tap_ok(!rc && zp1 == 0 && parked0 - parked1 == zparked &&
	       total0 - total1 == (long long)block_pages * (pc_page_size / 1024),
	       "block %d offline with its parked pages: %s; its zone's parked %lld -> "
	       "%lld, all zones' %lld -> %lld, MemTotal %lld -> %lld kB", blk,
	       rc ? strerror(errno) : "ok", zparked, zp1, parked0, parked1, total0, total1);

	/* 4 */
	off = 0;
	inblk = 0;
	if (addr && !pagecolor_pid_pfns(pid, (uintptr_t)addr, NPAGES, pfns))
		for (i = 0; i < NPAGES; i++) {
			off += pagecolor_pfn_color(pfns[i], pc_nr_colors) != COLOR;
			inblk += block_of(pfns[i]) == blk;
		}
	bad = addr ? damaged(pid, addr) : -1;
	tap_ok(bad == 0 && inblk == 0, "the child's pages moved out of the block "
	       "(%d still in it) with their contents (%ld bytes damaged); %d of %d now "
	       "off colour %d (offlining picks any colour, documented)", inblk, bad, off,
	       NPAGES, COLOR);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* 5 */
	pid2 = fork();
	if (pid2 == 0) {
		pc_run_on(child_cpu);
		pc_child_bound_touch("11", NPAGES2, 1);
		pause();
		_exit(0);
	}
	pfns2 = calloc(NPAGES2, sizeof(*pfns2));
	addr = NULL;
	for (i = 0; i < 300 && pid2 > 0 && !addr; i++) {
		usleep(20000);
		if (waitpid(pid2, &st, WNOHANG) == pid2) {
			pid2 = -1;
			break;
		}
		addr = child_addr(pid2, NPAGES2);
	}
	/* the mapping exists before it is touched: wait for every page */
	for (i = 0; i < 500 && addr; i++) {
		int j, present = 0;

		if (pagecolor_pid_pfns(pid2, (uintptr_t)addr, NPAGES2, pfns2))
			break;
		for (j = 0; j < NPAGES2; j++)
			present += pfns2[j] != 0;
		if (present == NPAGES2)
			break;
		usleep(20000);
	}
	off = inblk = 0;
	for (i = 0; addr && i < NPAGES2; i++) {
		off += !pfns2[i] || pagecolor_pfn_color(pfns2[i], pc_nr_colors) != COLOR;
		inblk += pfns2[i] && block_of(pfns2[i]) == blk;
	}
	tap_ok(pid2 > 0 && addr && off == 0 && inblk == 0, "a second child bound to "
	       "colour %d faults %d pages: %d off the colour, %d in the offline block%s",
	       COLOR, NPAGES2, off, inblk, pid2 > 0 ? "" : " (it died)");
	if (pid2 > 0) {
		kill(pid2, SIGKILL);
		waitpid(pid2, NULL, 0);
	}
	free(pfns2);

	/* 6 */
	rc = set_state(blk, "online");
	pc_wait_parked(1, 30000);
	worst = -1;
	for (i = 0; i < 5 && worst != 0; i++) {
		long long w = free_mismatch();

		if (w >= 0 && (worst < 0 || w < worst))
			worst = w;
		usleep(20000);
	}
	tap_ok(!rc && worst >= 0 && worst <= 64, "block %d online again (%s); zoneinfo's "
	       "free pages are buddyinfo's free blocks (zones at most %lld apart)", blk,
	       rc ? strerror(errno) : "ok", worst);
	tap_ok(total1 > 0 && pc_meminfo_kb("MemTotal") == total0,
	       "MemTotal back to %lld kB (%lld)", total0, pc_meminfo_kb("MemTotal"));
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Compaction and transparent huge pages beside pages of one colour
 * (issue 29 item 5).
 *
 * An unprivileged child (uid 65534, vm.page_color_restrict 0) bound to
 * colour 0 touches npages pages (half of colour 0's share of memory, at
 * most 512; the kernel and the bystanders below use frames of colour 0
 * too); then the parked pool is drained, so only its own pages are left
 * in use by the colour allocator.
 *
 * (a) Pinned pageblocks, a measurement.  Compaction leaves a page of a
 *     colour policy in place, so every pageblock holding one is lost to
 *     huge pages until the page is freed.  A pageblock of 512 frames
 *     holds 512 / nr_colors frames of a colour (at least one), so npages
 *     pages of one colour need at least npages / (512 / nr_colors)
 *     pageblocks: the minimum, which no placement can beat (at 256
 *     colours, 2 MiB of one colour span 512 MiB).  The pageblocks the
 *     child's frames lie in (read from its pagemap), the free order-9
 *     blocks, and the huge pages a bystander gets (MADV_HUGEPAGE, defrag
 *     "madvise", so direct compaction runs) before the child and while it
 *     holds its pages are printed.  Nothing packs coloured pages, so how
 *     far above the minimum they lie depends on what earlier programs left
 *     fragmented (16 colours: 17-21 pageblocks alone, 34 after the whole
 *     suite): printed, not bounded; the check is that the count is not
 *     below the minimum, i.e. that the frames read are of one colour.
 * (b) A full compaction gives the pool back.  The child touches an
 *     eighth of the colour's share more (at most 512; as many again in
 *     (c)), which parks pages again; vm.compact_memory asks for every
 *     block there is, so at most 1/10 of them may stay parked (kept, they
 *     cost a bystander's compaction a third of its huge-page blocks in
 *     color_pressure).  Draining on a proactive run (c) would only free
 *     pages that the next coloured fault splits a new block for.
 * (c) The same for proactive compaction.  The child touches as many more
 *     pages (the pool refills), a bystander fragments free memory (it
 *     touches 3/4 of it and frees every other page), and
 *     vm.compaction_proactiveness is set to 100 for 3 s (kcompactd looks
 *     every 500 ms; writing the sysctl wakes it): at least 9/10 of the
 *     parked pages must still be parked.  Proactive compaction runs when
 *     the node's fragmentation score passes 15 at proactiveness 100: the
 *     premise is that the score (in a guest of one zone, the share of
 *     free pages outside free blocks of order 9, from /proc/buddyinfo)
 *     is over 15.  A run that finds the zone compacted enough ends
 *     without scanning, so kcompactd's scanner counters are only printed.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define NOBODY		65534
#define NPAGES_MAX	512
#define BLOCK_PAGES	512	/* x86-64 pageblock: order 9, a PMD */
#define RESTRICT	"/proc/sys/vm/page_color_restrict"
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define COMPACT		"/proc/sys/vm/compact_memory"

static long long read_ll(const char *path)
{
	char buf[64];
	long long v;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * The child: uid 65534, bound to colour 0, with a mapping of @total
 * pages; on each count of pages read from @cmd it touches that many more
 * and answers with the mapping's address (0 when it could not).
 */
static void child(int cmd, int ans, size_t total)
{
	pagecolor_set_t zero = pc_set("0");
	uintptr_t addr = 0;
	size_t done = 0, j, n;
	char *p;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(20);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (pagecolor_set_policy(COLOR_MODE_BIND, &zero))
		_exit(21);
	p = mmap(NULL, total * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED)
		addr = (uintptr_t)p;
	while (read(cmd, &n, sizeof(n)) == sizeof(n)) {
		if (addr && done + n <= total) {
			for (j = 0; j < n; j++)
				p[(done + j) * pc_page_size] = 1;
			done += n;
		} else {
			addr = 0;
		}
		if (write(ans, &addr, sizeof(addr)) != sizeof(addr))
			_exit(22);
	}
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct pageblocks of @n frames; -1 when one is absent or off colour 0. */
static long pageblocks(uint64_t *pfns, size_t n)
{
	long blocks = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (!pfns[i] || pagecolor_pfn_color(pfns[i], pc_nr_colors) != 0)
			return -1;
	qsort(pfns, n, sizeof(*pfns), cmp_u64);
	for (i = 0; i < n; i++)
		if (!i || pfns[i] / BLOCK_PAGES != pfns[i - 1] / BLOCK_PAGES)
			blocks++;
	return blocks;
}

/* Huge pages a bystander gets with direct compaction, in a child process. */
static long bystander_thp(void)
{
	int fd[2], st;
	long n = -1;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		long got;

		close(fd[0]);
		got = (long)pc_eat_large_blocks();
		_exit(write(fd[1], &got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], &n, sizeof(n)) != sizeof(n))
		n = -1;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return n;
}

/*
 * Touch 3/4 of free memory and free every other page: free memory
 * in order-0 holes, which raises the fragmentation score proactive
 * compaction looks at.  The holes stay until the caller unmaps *@len.
 */
static char *fragment(size_t *len)
{
	size_t n = (size_t)pc_memfree_pages() * 3 / 4, i;
	char *p;

	*len = n * pc_page_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pc_touch(p, n);
	for (i = 0; i < n; i += 2)
		madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED);
	return p;
}

/* Have the child touch @n more pages: its mapping's address, or 0. */
static uintptr_t ask(int cmd, int ans, size_t n)
{
	uintptr_t addr = 0;

	if (write(cmd, &n, sizeof(n)) != sizeof(n) ||
	    read(ans, &addr, sizeof(addr)) != sizeof(addr))
		return 0;
	return addr;
}

int main(void)
{
	long long restrict_old, proactive_old, p1, p2, p3, scan0, scanned;
	long per_block, minimum, blocks, thp0, thp1, free0, free1, score;
	int cmd[2], ans[2], st;
	char defrag[64] = "", buf[32];
	uint64_t *pfns;
	uintptr_t addr;
	size_t frag_len = 0, share, npages, more;
	char *frag;
	FILE *f;
	pid_t pid;

	pc_init(5);
	if (geteuid() != 0) {
		tap_diag("must run as root (pagemap of the child, sysctls, drain)");
		return tap_finish();
	}
	f = fopen(PC_THP_DEFRAG, "r");
	if (f) {
		if (fgets(defrag, sizeof(defrag), f))
			defrag[strcspn(defrag, "\n")] = 0;
		fclose(f);
	}
	pc_write_file(PC_THP_DEFRAG, "madvise");
	restrict_old = read_ll(RESTRICT);
	if (restrict_old >= 0)
		pc_write_file(RESTRICT, "0");

	pc_wait_parked(1, 5000);
	pc_write_file(COMPACT, "1");
	free0 = pc_free_blocks(9, NULL);
	thp0 = bystander_thp();

	share = (size_t)(pc_meminfo_kb("MemTotal") * 1024 / pc_page_size / pc_nr_colors);
	npages = share / 2 < NPAGES_MAX ? share / 2 : NPAGES_MAX;
	more = share / 8 < NPAGES_MAX ? share / 8 : NPAGES_MAX;
	pfns = calloc(npages, sizeof(*pfns));
	if (!pfns || pipe(cmd) || pipe(ans)) {
		tap_diag("setup: %s", strerror(errno));
		return tap_finish();
	}
	pid = fork();
	if (pid == 0) {
		close(cmd[1]);
		close(ans[0]);
		child(cmd[0], ans[1], npages + 2 * more);
	}
	close(cmd[0]);
	close(ans[1]);

	/* (a) */
	addr = ask(cmd[1], ans[0], npages);
	pc_wait_parked(1, 5000);
	per_block = BLOCK_PAGES / pc_nr_colors ? BLOCK_PAGES / pc_nr_colors : 1;
	minimum = ((long)npages + per_block - 1) / per_block;
	blocks = addr && !pagecolor_pid_pfns(pid, addr, npages, pfns) ?
		 pageblocks(pfns, npages) : -1;
	free1 = pc_free_blocks(9, NULL);
	thp1 = bystander_thp();
	tap_diag("%zu pages of colour 0 of %d lie in %ld pageblocks (minimum %ld); free "
		 "order-9 blocks %ld before the child, %ld with it; bystander huge pages "
		 "%ld before, %ld with it", npages, pc_nr_colors, blocks, minimum, free0,
		 free1, thp0, thp1);
	tap_ok(blocks > 0, "the child got %zu pages, all of colour 0", npages);
	tap_ok(blocks >= minimum,
	       "they lie in %ld pageblocks, not fewer than the minimum %ld", blocks,
	       minimum);

	/* (b) */
	addr = ask(cmd[1], ans[0], more);
	p1 = pc_parked();
	pc_write_file(COMPACT, "1");
	p2 = pc_parked();
	tap_ok(addr && p1 > 0 && p2 <= p1 / 10,
	       "vm.compact_memory gives the parked pool back (%lld parked before, %lld after)",
	       p1, p2);

	/* (c) */
	addr = ask(cmd[1], ans[0], more);
	frag = fragment(&frag_len);
	free1 = pc_free_blocks(0, NULL);
	score = free1 > 0 ? (free1 - pc_free_blocks(9, NULL) * BLOCK_PAGES) * 100 / free1 : -1;
	p1 = pc_parked();
	proactive_old = read_ll(PROACTIVE);
	scan0 = pc_vmstat("compact_daemon_migrate_scanned") +
		pc_vmstat("compact_daemon_free_scanned");
	if (proactive_old >= 0)
		pc_write_file(PROACTIVE, "100");
	sleep(3);
	p3 = pc_parked();
	scanned = pc_vmstat("compact_daemon_migrate_scanned") +
		  pc_vmstat("compact_daemon_free_scanned") - scan0;
	if (proactive_old >= 0) {
		snprintf(buf, sizeof(buf), "%lld", proactive_old);
		pc_write_file(PROACTIVE, buf);
	}
	if (frag)
		munmap(frag, frag_len);
	tap_diag("proactive compaction: fragmentation score %ld, kcompactd scanned %lld "
		 "pages; %lld parked before, %lld after", score, scanned, p1, p3);
	tap_ok(addr && frag && score > 15 && p1 > 0 && p3 >= p1 - p1 / 10,
	       "fragmentation score %ld (over 15): proactive compaction kept the parked "
	       "pool (%lld parked before, %lld after)", score, p1, p3);

	close(cmd[1]);
	close(ans[0]);
	waitpid(pid, &st, 0);
	if (restrict_old >= 0) {
		snprintf(buf, sizeof(buf), "%lld", restrict_old);
		pc_write_file(RESTRICT, buf);
	}
	if (defrag[0]) {
		/* "always defer [madvise] never": the bracketed word */
		char *l = strchr(defrag, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = 0;
			pc_write_file(PC_THP_DEFRAG, l + 1);
		}
	}
	pc_wait_parked(0, 10000);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * KSM and colour policies (issue 29 item 10).
 *
 * Three processes fill NPAGES pages each with the same contents and mark
 * them MADV_MERGEABLE: C, bound to colour COLOR (a VMA policy), and two
 * uncoloured ones, U1 and U2.  KSM merges identical pages into one frame,
 * the frame of one of the pages merged.  Merged with C's pages, that
 * frame either has another colour (C's policy silently defeated) or is
 * C's own (U1 and U2 then use C's colour, the share of the cache C's
 * policy reserved).  The series' rule (page_coloring.rst, "Other paths
 * that move pages"): KSM leaves pages of a colour policy alone.
 *
 *  1. KSM runs: U1's and U2's pages are merged (one frame for both), the
 *     control that the test waited long enough;
 *  2. every page of C is on its colour;
 *  3. no page of C shares a frame with U1 or U2 (C was not merged);
 *  4. the same for D, whose colour is its task default policy
 *     (set_color_policy() before the mapping);
 *  5. C's contents intact; no BUG/WARNING in dmesg.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define KSM		"/sys/kernel/mm/ksm/"
#define NPAGES		64
#define COLOR		3
#define COLOR_D		5

enum kind { UNCOLOURED, VMA_POLICY, TASK_DEFAULT };

static uint64_t seed;

static void fill(char *p)
{
	size_t i, j;

	for (i = 0; i < NPAGES; i++)
		for (j = 0; j < (size_t)pc_page_size; j += 8)
			*(uint64_t *)(p + i * pc_page_size + j) = seed ^ (i << 20) ^ j;
}

static size_t damaged(const char *p)
{
	size_t i, j, bad = 0;

	for (i = 0; i < NPAGES; i++)
		for (j = 0; j < (size_t)pc_page_size; j += 8)
			bad += *(const uint64_t *)(p + i * pc_page_size + j) !=
			       (seed ^ (i << 20) ^ j);
	return bad;
}

/*
 * A child's body (pc_child_start()): map NPAGES pages coloured as *@arg
 * says, fill them, mark them mergeable, report their address and then
 * check their contents whenever the parent asks, answering with the
 * number of damaged words.
 */
static int child(void *arg, int cmd, int ans)
{
	enum kind kind = *(const enum kind *)arg;
	pagecolor_set_t s;
	size_t bad;
	char *p, x;

	if (kind == TASK_DEFAULT) {
		s = pc_set("5");
		if (pagecolor_set_policy(COLOR_MODE_BIND, &s))
			return 1;
	}
	p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	if (kind == VMA_POLICY) {
		s = pc_set("3");
		if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &s, 0))
			return 1;
	}
	fill(p);
	if (madvise(p, NPAGES * pc_page_size, MADV_MERGEABLE))
		return 2;
	if (write(ans, &p, sizeof(p)) != sizeof(p))
		return 1;
	while (read(cmd, &x, 1) == 1) {
		bad = damaged(p);
		if (write(ans, &bad, sizeof(bad)) != sizeof(bad))
			return 1;
	}
	return 0;
}

static pid_t start(enum kind kind, char **addr, int *cmd, int *ans)
{
	return pc_child_start(child, &kind, addr, cmd, ans);
}

static long ksm_read(const char *name)
{
	char path[128], buf[64];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), KSM "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static int ksm_write(const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), KSM "%s", name);
	return pc_write_file(path, val);
}

/* Pages of @a that share their frame with the page at the same index of @b. */
static int shared(const uint64_t *a, const uint64_t *b)
{
	int i, n = 0;

	for (i = 0; i < NPAGES; i++)
		n += a[i] && a[i] == b[i];
	return n;
}

/* Pages of @a whose frame is any of @b's frames. */
static int shared_any(const uint64_t *a, const uint64_t *b)
{
	int i, j, n = 0;

	for (i = 0; i < NPAGES; i++)
		for (j = 0; j < NPAGES; j++)
			if (a[i] && a[i] == b[j]) {
				n++;
				break;
			}
	return n;
}

static int off_colour(const uint64_t *pfns, int c)
{
	int i, n = 0;

	for (i = 0; i < NPAGES; i++)
		n += !pfns[i] || pagecolor_pfn_color(pfns[i], pc_nr_colors) != c;
	return n;
}

int main(void)
{
	uint64_t fc[NPAGES], fd_[NPAGES], f1[NPAGES], f2[NPAGES];
	char *pc = NULL, *pd = NULL, *p1 = NULL, *p2 = NULL;
	int cmd[4] = { -1, -1, -1, -1 }, ans[4] = { -1, -1, -1, -1 };
	long scans0, scans, sharing = -1;
	int trouble, i, u12 = 0, got = 0;
	size_t bad = (size_t)-1;
	pid_t pid[4];

	pc_init(6);
	trouble = pc_dmesg_trouble();
	if (ksm_read("run") < 0) {
		tap_ok(0, "KSM present (%s): %s", KSM "run", strerror(errno));
		return tap_finish();
	}
	seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
	/* C and D (the coloured ones) first: KSM scans in that order */
	pid[0] = start(VMA_POLICY, &pc, &cmd[0], &ans[0]);
	pid[1] = start(TASK_DEFAULT, &pd, &cmd[1], &ans[1]);
	pid[2] = start(UNCOLOURED, &p1, &cmd[2], &ans[2]);
	pid[3] = start(UNCOLOURED, &p2, &cmd[3], &ans[3]);
	if (!pc || !pd || !p1 || !p2) {
		tap_ok(0, "four children mapped, filled and marked their pages mergeable");
		goto out;
	}
	ksm_write("pages_to_scan", "1000");
	ksm_write("sleep_millisecs", "20");
	scans0 = ksm_read("full_scans");
	if (ksm_write("run", "1")) {
		tap_ok(0, "KSM started: %s", strerror(errno));
		goto out;
	}
	/* until U1's and U2's pages are merged, and then two full scans more */
	for (i = 0; i < 600; i++) {
		usleep(50000);
		if (pagecolor_pid_pfns(pid[2], (uintptr_t)p1, NPAGES, f1) ||
		    pagecolor_pid_pfns(pid[3], (uintptr_t)p2, NPAGES, f2))
			break;
		u12 = shared(f1, f2);
		if (u12 == NPAGES)
			break;
	}
	scans = ksm_read("full_scans");
	for (i = 0; i < 600 && ksm_read("full_scans") < scans + 2; i++)
		usleep(50000);
	scans = ksm_read("full_scans");
	sharing = ksm_read("pages_sharing");
	got = !pagecolor_pid_pfns(pid[0], (uintptr_t)pc, NPAGES, fc) &&
	      !pagecolor_pid_pfns(pid[1], (uintptr_t)pd, NPAGES, fd_) &&
	      !pagecolor_pid_pfns(pid[2], (uintptr_t)p1, NPAGES, f1) &&
	      !pagecolor_pid_pfns(pid[3], (uintptr_t)p2, NPAGES, f2);
	u12 = got ? shared(f1, f2) : -1;
	tap_diag("KSM: %ld full scans, pages_shared %ld, pages_sharing %ld", scans - scans0,
		 ksm_read("pages_shared"), sharing);
	tap_ok(got && u12 == NPAGES, "KSM merged the uncoloured U1's and U2's pages "
	       "(%d of %d share a frame)", u12, NPAGES);
	if (got) {
		int off = off_colour(fc, COLOR), w1 = shared_any(fc, f1),
		    w2 = shared_any(fc, f2);

		tap_ok(off == 0, "every page of C (bound to colour %d) on its colour "
		       "(%d of %d off it)", COLOR, off, NPAGES);
		tap_ok(w1 == 0 && w2 == 0, "C's pages not merged with U1's or U2's "
		       "(%d and %d share a frame; the merged frames' colour: %d)",
		       w1, w2, f1[0] ? pagecolor_pfn_color(f1[0], pc_nr_colors) : -1);
		off = off_colour(fd_, COLOR_D);
		w1 = shared_any(fd_, f1);
		tap_ok(off == 0 && w1 == 0, "D (task default bound to colour %d): %d of %d "
		       "pages off its colour, %d share a frame with U1", COLOR_D, off,
		       NPAGES, w1);
	} else {
		tap_ok(0, "C's pages read from pagemap");
		tap_ok(0, "C's frames read from pagemap");
		tap_ok(0, "D's frames read from pagemap");
	}
	pc_child_stop(pid[0], cmd[0], ans[0], &bad);
	pid[0] = -1;
	tap_ok(bad == 0, "C's contents intact (%zd damaged words)", (ssize_t)bad);
out:
	ksm_write("run", "2");	/* unmerge everything */
	for (i = 0; i < 4; i++)
		if (pid[i] > 0)
			pc_child_stop(pid[i], cmd[i], ans[i], NULL);
	ksm_write("run", "0");
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}

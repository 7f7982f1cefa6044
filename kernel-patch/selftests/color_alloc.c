// SPDX-License-Identifier: GPL-2.0
/*
 * Placement: every page of a coloured range has an allowed colour (frame
 * numbers from /proc/self/pagemap), for anonymous memory, shmem, tmpfs
 * files, after fork and copy-on-write, after mremap, after the migrate
 * flag; policies are reported back and inherited; uncoloured memory spreads
 * over many colours.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define NPAGES	256

static pagecolor_set_t setA, setB, setM;

static void *map_anon(size_t npages, int flags)
{
	void *p = mmap(NULL, npages * pc_page_size, PROT_READ | PROT_WRITE,
		       flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		tap_diag("mmap: %s", strerror(errno));
		exit(tap_finish());
	}
	return p;
}

static int policy_is(void *addr, unsigned int flags, int want_mode,
		     const pagecolor_set_t *want)
{
	pagecolor_set_t got;
	int mode = -1;

	if (pagecolor_get_policy(&mode, &got, addr, flags) != 0) {
		tap_diag("get_color_policy(%p, %u): %s", addr, flags, strerror(errno));
		return 0;
	}
	if (mode != want_mode) {
		tap_diag("get_color_policy: mode %d, want %d", mode, want_mode);
		return 0;
	}
	if (want && !pagecolor_set_equal(&got, want)) {
		char a[256], b[256];

		pagecolor_set_format(&got, a, sizeof(a));
		pagecolor_set_format(want, b, sizeof(b));
		tap_diag("get_color_policy: set {%s}, want {%s}", a, b);
		return 0;
	}
	return 1;
}

static int bind_range(void *p, size_t npages, const pagecolor_set_t *s,
		      unsigned int flags)
{
	if (pagecolor_mbind(p, npages * pc_page_size, COLOR_MODE_BIND, s, flags)) {
		tap_diag("color_mbind: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Run fn in a child; ok when it exits 0. */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return 0;
	if (pid == 0)
		_exit(fn(arg) ? 0 : 1);
	if (waitpid(pid, &st, 0) != pid)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		tap_diag("child status 0x%x", st);
		return 0;
	}
	return 1;
}

static int child_default_inherited(void *arg)
{
	char *p;

	(void)arg;
	if (!policy_is(NULL, 0, COLOR_MODE_BIND, &setB))
		return 0;
	p = map_anon(NPAGES, MAP_PRIVATE);
	pc_touch(p, NPAGES);
	return pc_range_ok(p, NPAGES, &setB, "child task default");
}

static char *cow_area;

static int child_cow(void *arg)
{
	uint64_t before, after;

	(void)arg;
	if (!policy_is(cow_area, COLOR_POLICY_ADDR, COLOR_MODE_BIND, &setA))
		return 0;
	if (pagecolor_pfn(cow_area, &before))
		return 0;
	pc_touch(cow_area, NPAGES);	/* copy-on-write every page */
	if (pagecolor_pfn(cow_area, &after))
		return 0;
	if (before == after) {
		tap_diag("COW did not copy (pfn %llu)", (unsigned long long)after);
		return 0;
	}
	return pc_range_ok(cow_area, NPAGES, &setA, "child after COW");
}

static char *shared_area;

static int child_shared(void *arg)
{
	(void)arg;
	/*
	 * Second half is not populated yet: fault it in from the child.  The
	 * first half is in the shmem object but not mapped in the child (fork
	 * does not copy page tables of shared mappings): touch it too.
	 */
	pc_touch(shared_area, NPAGES);
	return pc_range_ok(shared_area, NPAGES, &setA, "shared anon from child");
}

static int child_uncoloured(void *arg)
{
	struct pc_check r;
	size_t n = 4096;
	int want = pc_nr_colors < 64 ? pc_nr_colors / 2 : 32;
	char *p;

	(void)arg;
	if (!policy_is(NULL, 0, COLOR_MODE_DEFAULT, NULL))
		return 0;
	p = map_anon(n, MAP_PRIVATE);
	pc_touch(p, n);
	if (pc_check_range(p, n, NULL, &r) || r.absent)
		return 0;
	tap_diag("uncoloured: %zu pages over %d distinct colours", n, r.distinct);
	return r.distinct >= want;
}

static void make_sets(void)
{
	char buf[64];
	int i, q4 = pc_nr_colors >= 4 ? pc_nr_colors / 4 : 1;

	snprintf(buf, sizeof(buf), "0-%d", q4 - 1);
	setA = pc_set(buf);
	if (pc_nr_colors >= 4) {
		/* every fourth colour, offset 1: non-contiguous */
		pagecolor_set_zero(&setB);
		for (i = 1; i < pc_nr_colors; i += 4)
			pagecolor_set_add(&setB, i);
		snprintf(buf, sizeof(buf), "%d-%d", pc_nr_colors / 2,
			 pc_nr_colors / 2 + q4 - 1);
		setM = pc_set(buf);
	} else {
		setB = setA;
		setM = setA;
	}
}

/* After execve(): the task default must still be setB. */
static int exec_check(void)
{
	char *p;

	pc_page_size = sysconf(_SC_PAGESIZE);
	pc_nr_colors = pagecolor_nr_colors();
	if (pc_nr_colors <= 0)
		return 1;
	make_sets();
	if (!policy_is(NULL, 0, COLOR_MODE_BIND, &setB))
		return 1;
	p = map_anon(NPAGES, MAP_PRIVATE);
	pc_touch(p, NPAGES);
	return pc_range_ok(p, NPAGES, &setB, "after execve") ? 0 : 1;
}

static int exec_child(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "color_alloc", "--exec-check", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		tap_diag("exec child status 0x%x", st);
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	char *p, *q, *h;
	int fd, i, ok;
	struct pc_check r;
	FILE *f;

	if (argc > 1 && strcmp(argv[1], "--exec-check") == 0)
		return exec_check();
	pc_init(22);
	make_sets();

	/* 1 */
	tap_ok(policy_is(NULL, 0, COLOR_MODE_DEFAULT, NULL),
	       "initial task policy is default");

	/* 2, 3: anonymous private, bound before first touch */
	p = map_anon(NPAGES, MAP_PRIVATE);
	ok = bind_range(p, NPAGES, &setA, 0) == 0;
	pc_touch(p, NPAGES);
	tap_ok(ok && pc_range_ok(p, NPAGES, &setA, "anon"),
	       "anonymous private range: all pages in the bound colours");
	tap_ok(policy_is(p + pc_page_size, COLOR_POLICY_ADDR, COLOR_MODE_BIND, &setA),
	       "get_color_policy(COLOR_POLICY_ADDR) reports the VMA policy");

	/* 4: /proc/self/color_maps mentions the range */
	f = fopen("/proc/self/color_maps", "r");
	ok = 0;
	if (f) {
		char line[1024], hex[32];

		snprintf(hex, sizeof(hex), "%lx", (unsigned long)p);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, hex))
				ok = 1;
		fclose(f);
	} else {
		tap_diag("/proc/self/color_maps: %s", strerror(errno));
	}
	tap_ok(ok, "/proc/self/color_maps lists the coloured VMA");

	/* 5: fork + copy-on-write */
	cow_area = p;
	tap_ok(in_child(child_cow, NULL), "fork: child inherits VMA policy, COW copies are in the bound colours");
	/* 6 */
	pc_touch(p, NPAGES);
	tap_ok(pc_range_ok(p, NPAGES, &setA, "parent after fork"),
	       "parent pages still in the bound colours after fork and writes");

	/* 7, 8: mremap moved, then grown */
	q = mmap(NULL, 2 * NPAGES * pc_page_size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(q + NPAGES * pc_page_size, NPAGES * pc_page_size);
	p = mremap(p, NPAGES * pc_page_size, NPAGES * pc_page_size,
		   MREMAP_MAYMOVE | MREMAP_FIXED, q);
	tap_ok(p == q && pc_range_ok(p, NPAGES, &setA, "mremap moved") &&
	       policy_is(p, COLOR_POLICY_ADDR, COLOR_MODE_BIND, &setA),
	       "mremap (moved): pages and policy keep their colours");
	q = mremap(p, NPAGES * pc_page_size, 4 * NPAGES * pc_page_size, MREMAP_MAYMOVE);
	ok = q != MAP_FAILED;
	if (ok) {
		pc_touch(q, 4 * NPAGES);
		ok = pc_range_ok(q, 4 * NPAGES, &setA, "mremap grown");
		munmap(q, 4 * NPAGES * pc_page_size);
	} else {
		tap_diag("mremap grow: %s", strerror(errno));
		munmap(p, NPAGES * pc_page_size);
	}
	tap_ok(ok, "mremap (grown): new tail pages are in the bound colours");

	/* 9, 10: shared anonymous (shmem), fault from parent and child */
	shared_area = map_anon(NPAGES, MAP_SHARED);
	ok = bind_range(shared_area, NPAGES, &setA, 0) == 0;
	pc_touch(shared_area, NPAGES / 2);
	tap_ok(ok && pc_range_ok(shared_area, NPAGES / 2, &setA, "shared anon"),
	       "MAP_SHARED|MAP_ANONYMOUS (shmem): pages in the bound colours");
	tap_ok(in_child(child_shared, NULL),
	       "shmem pages faulted in by a forked child are in the bound colours");
	munmap(shared_area, NPAGES * pc_page_size);

	/* 11: tmpfs file */
	ok = 0;
	fd = open("/tmp/pc_tmpfs_file", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && ftruncate(fd, NPAGES * pc_page_size) == 0) {
		p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			ok = bind_range(p, NPAGES, &setA, 0) == 0;
			pc_touch(p, NPAGES);
			ok = ok && pc_range_ok(p, NPAGES, &setA, "tmpfs file");
			munmap(p, NPAGES * pc_page_size);
		}
	} else {
		tap_diag("/tmp/pc_tmpfs_file: %s", strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	unlink("/tmp/pc_tmpfs_file");
	tap_ok(ok, "tmpfs file mapping: pages in the bound colours");

	/* 12, 13: migrate already populated memory */
	p = map_anon(NPAGES, MAP_PRIVATE);
	for (i = 0; i < NPAGES; i++)
		p[i * pc_page_size] = pc_page_byte(i * 7 + 3);
	pc_check_range(p, NPAGES, NULL, &r);
	tap_diag("before migrate: %d distinct colours", r.distinct);
	ok = bind_range(p, NPAGES, &setM, COLOR_MBIND_MIGRATE) == 0;
	tap_ok(ok && pc_range_ok(p, NPAGES, &setM, "after COLOR_MBIND_MIGRATE"),
	       "COLOR_MBIND_MIGRATE moves populated pages to the new colours");
	ok = 1;
	for (i = 0; i < NPAGES; i++)
		if (p[i * pc_page_size] != pc_page_byte(i * 7 + 3))
			ok = 0;
	tap_ok(ok, "page contents survive migration");
	munmap(p, NPAGES * pc_page_size);

	/* 14: split: colour only the middle third */
	p = map_anon(3 * NPAGES, MAP_PRIVATE);
	ok = bind_range(p + NPAGES * pc_page_size, NPAGES, &setA, 0) == 0;
	pc_touch(p, 3 * NPAGES);
	ok = ok && pc_range_ok(p + NPAGES * pc_page_size, NPAGES, &setA, "middle") &&
	     policy_is(p, COLOR_POLICY_ADDR, COLOR_MODE_DEFAULT, NULL) &&
	     policy_is(p + 2 * NPAGES * pc_page_size, COLOR_POLICY_ADDR,
		       COLOR_MODE_DEFAULT, NULL);
	tap_ok(ok, "VMA split: only the middle part is coloured");
	/* 15: remove the policy again */
	ok = pagecolor_mbind(p + NPAGES * pc_page_size, NPAGES * pc_page_size,
			     COLOR_MODE_DEFAULT, NULL, 0) == 0 &&
	     policy_is(p + NPAGES * pc_page_size, COLOR_POLICY_ADDR,
		       COLOR_MODE_DEFAULT, NULL);
	tap_ok(ok, "COLOR_MODE_DEFAULT removes a range policy");
	munmap(p, 3 * NPAGES * pc_page_size);

	/* 16: transparent huge pages are not used for coloured ranges */
	{
		size_t n = 1024; /* 4 MiB: room for an aligned 2 MiB THP */

		h = map_anon(n, MAP_PRIVATE);

		madvise(h, n * pc_page_size, MADV_HUGEPAGE);
		ok = bind_range(h, n, &setA, 0) == 0;
		pc_touch(h, n);
		tap_ok(ok && pc_range_ok(h, n, &setA, "MADV_HUGEPAGE range"),
		       "MADV_HUGEPAGE coloured range still gets allowed colours only");
		munmap(h, n * pc_page_size);
	}

	/* 17: compaction must not move coloured pages to other colours */
	{
		size_t n = 4 * NPAGES;
		int fd2 = open("/proc/sys/vm/compact_memory", O_WRONLY);

		if (fd2 < 0) {
			tap_skip("compaction keeps colours (no /proc/sys/vm/compact_memory)");
		} else {
			char *junk = map_anon(16 * NPAGES, MAP_PRIVATE);

			h = map_anon(n, MAP_PRIVATE);
			ok = bind_range(h, n, &setA, 0) == 0;
			/* interleave with uncoloured pages, then free those:
			 * leaves holes for compaction to fill */
			for (i = 0; i < (int)n; i++) {
				h[(size_t)i * pc_page_size] = 1;
				junk[(size_t)(4 * i) * pc_page_size] = 1;
				junk[(size_t)(4 * i + 1) * pc_page_size] = 1;
				junk[(size_t)(4 * i + 2) * pc_page_size] = 1;
				junk[(size_t)(4 * i + 3) * pc_page_size] = 1;
			}
			munmap(junk, 16 * NPAGES * pc_page_size);
			ok = ok && pc_range_ok(h, n, &setA, "before compaction");
			if (write(fd2, "1", 1) != 1)
				tap_diag("compact_memory: %s", strerror(errno));
			close(fd2);
			tap_ok(ok && pc_range_ok(h, n, &setA, "after compaction"),
			       "compaction keeps coloured pages in their colours");
			munmap(h, n * pc_page_size);
		}
	}

	/* 18, 19: task default policy */
	ok = pagecolor_set_policy(COLOR_MODE_BIND, &setB) == 0;
	tap_ok(ok && policy_is(NULL, 0, COLOR_MODE_BIND, &setB),
	       "set_color_policy: task default reported back");
	p = map_anon(NPAGES, MAP_PRIVATE);
	pc_touch(p, NPAGES);
	tap_ok(pc_range_ok(p, NPAGES, &setB, "task default"),
	       "task default applies to new anonymous memory");
	munmap(p, NPAGES * pc_page_size);
	/* 19 */
	tap_ok(in_child(child_default_inherited, NULL),
	       "task default is inherited across fork");
	tap_ok(exec_child(), "task default is kept across execve");
	pagecolor_set_policy(COLOR_MODE_DEFAULT, NULL);
	/* 20 */
	tap_ok(in_child(child_uncoloured, NULL),
	       "uncoloured process: pages spread over many colours");
	return tap_finish();
}

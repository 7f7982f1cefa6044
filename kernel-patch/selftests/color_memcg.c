// SPDX-License-Identifier: GPL-2.0
/*
 * Colour-aimed reclaim honours memory cgroup protection (issue 29 item 3).
 *
 * An uncoloured bystander in a cgroup v2 group whose memory.min covers
 * its page cache reads the first quarter of memory's worth of a RAM disk
 * (/dev/ram0); the test itself, in the root group, then reads on past it
 * until memory is full of page cache, most of it unprotected.  An
 * unprivileged attacker (uid/gid 65534, allowed to colour by
 * vm.page_color_restrict = 0 for the test) binds half of colour 0's
 * share of memory to colour 0, over twice what free memory gives the
 * colour, so the allocator must reclaim where colour 0 is.
 *
 * It must get every page from the unprotected cache, and the bystander's
 * cache must stay resident to the page (mincore() on a mapping of the RAM
 * disk, exact where memory.stat is batched per CPU): ordinary reclaim never
 * goes below memory.min, and neither may the reclaim aimed at a colour.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define RAMDISK		"/dev/ram0"
#define CGROOT		"/sys/fs/cgroup"
#define CGPROT		CGROOT "/color_memcg_prot"
#define SYSCTL		"/proc/sys/vm/page_color_restrict"
#define NOBODY		65534
#define IDLE_MS		60000
#define TIMEOUT		300	/* seconds; TCG is slow */
#define EXIT_BADCOLOR	43

static void on_alarm(int sig)
{
	(void)sig;	/* only interrupts the parent's read() */
}

/* Read [off, off + bytes) of @fd through the page cache: bytes read. */
static long long read_range(int fd, long long off, long long bytes)
{
	static char buf[1 << 20];
	long long done = 0;
	ssize_t n;

	while (done < bytes &&
	       (n = pread(fd, buf, bytes - done < (long long)sizeof(buf) ?
			  (size_t)(bytes - done) : sizeof(buf), off + done)) > 0)
		done += n;
	return done;
}

/* Pages of [0, len) of the RAM disk in its page cache (mincore), -1 on error. */
static long resident(const void *map, size_t len)
{
	size_t n = len / pc_page_size, i;
	unsigned char *vec = malloc(n);
	long r = 0;

	if (!vec || mincore((void *)map, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

/* Set up the protected group: 0, or -1 (with a diagnostic). */
static int cgroup_setup(long long min_bytes)
{
	char val[64];

	mkdir(CGROOT, 0755);
	if (mount("none", CGROOT, "cgroup2", 0, NULL) && errno != EBUSY) {
		tap_diag("mount cgroup2: %s (test.config has CONFIG_MEMCG)", strerror(errno));
		return -1;
	}
	if (pc_write_file(CGROOT "/cgroup.subtree_control", "+memory")) {
		tap_diag("enable the memory controller: %s", strerror(errno));
		return -1;
	}
	if (mkdir(CGPROT, 0755) && errno != EEXIST)
		return -1;
	snprintf(val, sizeof(val), "%lld", min_bytes);
	if (pc_write_file(CGPROT "/memory.min", val)) {
		tap_diag("memory.min: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The bystander: joins the protected group, reads [0, bytes), exits. */
static int bystander(int fd, long long bytes)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (pc_write_file(CGPROT "/cgroup.procs", me)) {
			printf("# %s: %s\n", CGPROT "/cgroup.procs", strerror(errno));
			_exit(20);
		}
		_exit(read_range(fd, 0, bytes) == bytes ? 0 : 21);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The attacker: uid 65534, n pages bound to colour 0.  It cannot read its
 * own frame numbers (pagemap hides them from it): it writes its address to
 * @out once every page is touched and waits for @in to close while root
 * checks the colours.
 */
static void attacker(size_t n, int out, int in)
{
	char *p, c;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(21);
	p = pc_child_bound_touch("0", n, 22);
	if (write(out, &p, sizeof(p)) != sizeof(p))
		_exit(23);
	while (read(in, &c, 1) > 0)
		;
	_exit(0);
}

/* Root's look at the attacker's n pages at @addr: pages not of colour 0. */
static long attacker_bad_pages(pid_t pid, uintptr_t addr, size_t n)
{
	uint64_t *pfns = calloc(n, sizeof(*pfns));
	long bad = 0;
	size_t i;

	if (!pfns || pagecolor_pid_pfns(pid, addr, n, pfns)) {
		free(pfns);
		return -1;
	}
	for (i = 0; i < n; i++)
		bad += !pfns[i] || pagecolor_pfn_color(pfns[i], pc_nr_colors) != 0;
	free(pfns);
	return bad;
}

int main(void)
{
	long long total_kb, prot_bytes, fill, full;
	unsigned long long rc0 = 0, rc1 = 0;
	int fd, st = -1, trouble, kills0, kills1, idle, restrict0 = -1, ok_setup;
	long res0, res1, prot_pages, parked, bad = -1;
	int up[2], down[2];
	struct sigaction sa;
	void *addr = NULL;
	size_t per, want, free_c0;
	char buf[32];
	FILE *f;
	void *map;
	pid_t pid;

	pc_init(6);
	trouble = pc_dmesg_trouble();
	per = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
	/*
	 * Half of the colour's share: a quarter of its frames hold the
	 * protected cache, and more would leave the colour only the OOM
	 * killer (within the colour, which is right, but not this test).
	 */
	want = per / 2;
	pc_settle();
	total_kb = pc_meminfo_kb("MemTotal");
	prot_bytes = total_kb * 1024 / 4 / pc_page_size * pc_page_size;
	prot_pages = prot_bytes / pc_page_size;

	fd = open(RAMDISK, O_RDONLY);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, prot_bytes, PROT_READ, MAP_SHARED, fd, 0);
	ok_setup = fd >= 0 && map != MAP_FAILED && !cgroup_setup(prot_bytes + (16 << 20));
	if (!ok_setup)
		tap_diag("%s: %s", RAMDISK, strerror(errno));
	/*
	 * The partition scan at boot read the first pages of the RAM disk
	 * into the root group's cache: drop them, so that all of
	 * [0, prot_bytes) is the bystander's.
	 */
	if (ok_setup)
		posix_fadvise(fd, 0, prot_bytes, POSIX_FADV_DONTNEED);
	if (ok_setup) {
		int rc = bystander(fd, prot_bytes);

		if (rc) {
			tap_diag("bystander failed: exit %d (20: joining the group, "
				 "21: reading)", rc);
			ok_setup = 0;
		}
	}
	/* the rest of memory: unprotected cache, read from the root group */
	fill = ok_setup ? read_range(fd, prot_bytes, total_kb * 1024) : 0;
	idle = pc_wait_kswapd_idle(IDLE_MS);
	parked = pc_wait_parked(1, IDLE_MS);
	res0 = ok_setup ? resident(map, prot_bytes) : -1;
	full = pc_memfree_pages();
	free_c0 = (size_t)(full / pc_nr_colors);
	tap_diag("bystander's cache %ld of %ld pages resident (memory.min %lld MiB), "
		 "%lld MiB more read unprotected, %lld pages free (%zu per colour), "
		 "binding %zu pages to colour 0", res0, prot_pages,
		 (prot_bytes >> 20) + 16, fill >> 20, full, free_c0, want);
	tap_ok(ok_setup && idle == 0 && parked == 0 && res0 >= prot_pages * 95 / 100 &&
	       free_c0 < want / 2,
	       "premise: the protected cache resident (%ld >= 95%% of %ld), kswapd "
	       "asleep, nothing parked, colour 0 short of free pages (%zu < %zu)",
	       res0, prot_pages, free_c0, want / 2);
	if (!ok_setup)
		return tap_finish();

	f = fopen(SYSCTL, "r");
	if (f) {
		if (fscanf(f, "%d", &restrict0) != 1)
			restrict0 = -1;
		fclose(f);
	}
	pc_write_file(SYSCTL, "0");
	kills0 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc0);
	if (pipe(up) || pipe(down))
		return tap_finish();
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		attacker(want, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	/* the attacker's address once it touched every page (TCG is slow) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(TIMEOUT);
	if (pid > 0 && read(up[0], &addr, sizeof(addr)) == sizeof(addr))
		bad = attacker_bad_pages(pid, (uintptr_t)addr, want);
	alarm(0);
	if (bad == -1 && pid > 0) {
		tap_diag("attacker did not touch its pages in %d s: killing it", TIMEOUT);
		kill(pid, SIGKILL);
	}
	close(down[1]);
	if (pid > 0 && waitpid(pid, &st, 0) != pid)
		st = -1;
	if (restrict0 >= 0) {
		snprintf(buf, sizeof(buf), "%d", restrict0);
		pc_write_file(SYSCTL, buf);
	}
	res1 = resident(map, prot_bytes);
	kills1 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc1);
	tap_diag("attacker status 0x%x; bystander's cache %ld -> %ld pages; "
		 "reclaimed %llu -> %llu", st, res0, res1, rc0, rc1);

	tap_ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && bad == 0,
	       "uid 65534 got all %zu pages, every one of colour 0 (exit %d, %ld "
	       "of another colour or absent)", want,
	       st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, bad);
	tap_ok(kills1 == kills0, "no OOM kill (%d -> %d)", kills0, kills1);
	tap_ok(rc1 > rc0, "the reclaim aimed at colour 0 ran on unprotected cache "
	       "(reclaimed %llu -> %llu)", rc0, rc1);
	tap_ok(res1 >= 0 && res1 >= res0,
	       "the bystander's cache under memory.min survived: %ld -> %ld pages "
	       "(lost %ld)", res0, res1, res0 - res1);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");

	munmap(map, prot_bytes);
	close(fd);
	pc_wait_parked(0, 10000);
	return tap_finish();
}

// SPDX-License-Identifier: GPL-2.0
#include "pc_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

int pc_nr_colors;
long pc_page_size;

static int plan, done, failed;

void tap_plan(int n)
{
	plan = n;
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
}

void tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	done++;
	if (!cond)
		failed++;
	printf("%sok %d - ", cond ? "" : "not ", done);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void tap_skip(const char *fmt, ...)
{
	va_list ap;

	done++;
	printf("ok %d - ", done);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP\n");
	fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int tap_finish(void)
{
	while (done < plan)
		tap_ok(0, "test not reached");
	if (done > plan) {
		tap_diag("planned %d tests but ran %d", plan, done);
		failed++;
	}
	printf("# Totals: pass:%d fail:%d\n", done - failed, failed);
	fflush(stdout);
	return failed ? KSFT_FAIL : KSFT_PASS;
}

void pc_init(int n)
{
	pc_page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!pagecolor_supported()) {
		printf("TAP version 13\n1..0 # SKIP page colouring not supported "
		       "by the running kernel (%s)\n", strerror(errno));
		exit(KSFT_SKIP);
	}
	pc_nr_colors = pagecolor_nr_colors();
	tap_plan(n);
	tap_diag("nr_colors %d", pc_nr_colors);
}

double pc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pagecolor_pfns(), read again while a page is absent: see pc_check_range(). */
static int read_pfns(const void *addr, size_t npages, uint64_t *pfns)
{
	int tries = 0;
	size_t i;

	for (;;) {
		if (pagecolor_pfns(addr, npages, pfns) != 0)
			return -1;
		for (i = 0; i < npages && pfns[i]; i++)
			;
		if (i == npages || ++tries > PC_ABSENT_TRIES)
			return 0;
		usleep(5000);
	}
}

int pc_check_range(const void *addr, size_t npages, const pagecolor_set_t *allowed,
		   struct pc_check *res)
{
	uint64_t *pfns = calloc(npages ? npages : 1, sizeof(*pfns));
	static unsigned char seen[PAGE_COLOR_MAX_COLORS];
	size_t i;

	memset(res, 0, sizeof(*res));
	res->first_bad_color = -1;
	if (!pfns)
		return -1;
	if (read_pfns(addr, npages, pfns) != 0) {
		tap_diag("pagemap: %s", strerror(errno));
		free(pfns);
		return -1;
	}
	memset(seen, 0, sizeof(seen));
	res->pages = npages;
	for (i = 0; i < npages; i++) {
		int c;

		if (!pfns[i]) {
			res->absent++;
			continue;
		}
		c = pagecolor_pfn_color(pfns[i], pc_nr_colors);
		if (!seen[c]) {
			seen[c] = 1;
			res->distinct++;
		}
		if (allowed && pagecolor_set_test(allowed, c) != 1) {
			if (!res->bad) {
				res->first_bad_color = c;
				res->first_bad_page = i;
			}
			res->bad++;
		}
	}
	free(pfns);
	return 0;
}

int pc_range_ok(const void *addr, size_t npages, const pagecolor_set_t *allowed,
		const char *what)
{
	struct pc_check r;

	if (pc_check_range(addr, npages, allowed, &r) != 0)
		return 0;
	if (r.absent || r.bad) {
		char buf[256];

		pagecolor_set_format(allowed, buf, sizeof(buf));
		tap_diag("%s: %zu pages, %zu absent, %zu with colours outside {%s} "
			 "(first: page %zu colour %d), %d distinct colours",
			 what, r.pages, r.absent, r.bad, buf, r.first_bad_page,
			 r.first_bad_color, r.distinct);
		return 0;
	}
	return 1;
}

size_t pc_color_share(void)
{
	return (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
}

int pc_colors_holding(size_t pages)
{
	size_t share = pc_color_share(), w;

	if (!share)
		return pc_nr_colors;
	w = (3 * pages / 2 + share - 1) / share;
	return w ? (int)w : 1;
}

void pc_touch(void *addr, size_t npages)
{
	volatile char *p = addr;
	size_t i;

	for (i = 0; i < npages; i++)
		p[i * (size_t)pc_page_size] = pc_page_byte(i);
}

pagecolor_set_t pc_set(const char *list)
{
	pagecolor_set_t s;

	if (pagecolor_set_parse(&s, list, pc_nr_colors) != 0) {
		tap_diag("bad colour list %s for %d colours", list, pc_nr_colors);
		exit(KSFT_FAIL);
	}
	return s;
}

/* The kernel log as one NUL-terminated string (free() it), or NULL. */
static char *pc_dmesg_read(void)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf;
	int n;

	if (len <= 0)
		len = 1 << 20;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return NULL;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	if (n < 0) {
		tap_diag("klogctl: %s", strerror(errno));
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

int pc_dmesg_trouble(void)
{
	static const char *pat[] = { "BUG:", "WARNING:", "Oops", "KASAN",
				     "kernel BUG", "general protection fault",
				     "UBSAN", "list_add corruption",
				     "list_del corruption", "Bad page" };
	char *buf = pc_dmesg_read(), *line, *save = NULL;
	int bad = 0;
	size_t k;

	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		for (k = 0; k < sizeof(pat) / sizeof(pat[0]); k++) {
			if (strstr(line, pat[k])) {
				if (bad < 20)
					tap_diag("dmesg: %s", line);
				bad++;
				break;
			}
		}
	}
	free(buf);
	return bad;
}

int pc_dmesg_find(const char *needle, char *last, size_t len)
{
	char *buf = pc_dmesg_read(), *line, *save = NULL;
	int found = 0;

	if (!buf)
		return -1;
	if (last && len)
		last[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, needle))
			continue;
		found++;
		if (last && len)
			snprintf(last, len, "%s", line);
	}
	free(buf);
	return found;
}

int pc_order_of(unsigned long pages)
{
	int o = 0;

	while ((2UL << o) <= pages)
		o++;
	return o;
}

long long pc_free_total(unsigned long *counts, int max)
{
	int n = pagecolor_free_pages(counts, max), i;
	long long sum = 0;

	if (n < 0)
		return -1;
	for (i = 0; i < n; i++)
		sum += (long long)counts[i];
	return sum;
}

long long pc_vmstat(const char *key)
{
	char line[256], name[128];
	long long v, ret = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", name, &v) == 2 && !strcmp(name, key))
			ret = v;
	fclose(f);
	return ret;
}

void pc_vmstats(const char *const *keys, size_t n, long long *v)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = pc_vmstat(keys[i]);
}

void pc_vmstats_growth(const char *what, const char *const *keys, size_t n,
		       const long long *before, long long *growth)
{
	long long v;
	size_t i;

	printf("# %s:", what);
	for (i = 0; i < n; i++) {
		v = pc_vmstat(keys[i]) - before[i];
		if (growth)
			growth[i] = v;
		printf(" %s +%lld", keys[i], v);
	}
	printf("\n");
}

long long pc_meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	size_t len = strlen(key);
	char line[256];
	long long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, len) == 0 && line[len] == ':' &&
		    sscanf(line + len + 1, " %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long long pc_memfree_pages(void)
{
	long long kb = pc_meminfo_kb("MemFree"), pcp = 0, v;
	char line[256];
	FILE *f;

	if (kb < 0)
		return -1;
	/*
	 * Free pages on the per-CPU lists are not in MemFree; after a burst of
	 * frees they hold thousands of pages (pcp "high" is ~14000 pages for a
	 * 1 GiB zone and one CPU).  Count them as free.
	 */
	f = fopen("/proc/zoneinfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " count: %lld", &v) == 1)
				pcp += v;
		fclose(f);
	}
	return kb * 1024 / pc_page_size + pcp;
}

long long pc_wait_parked(int drain, int timeout_ms)
{
	unsigned long long parked = ~0ULL;
	int waited = 0;

	if (drain && pagecolor_drain())
		return -1;
	for (;;) {
		if (pagecolor_read_counter("parked", &parked))
			return -1;
		if (!parked || waited >= timeout_ms)
			return (long long)parked;
		usleep(10 * 1000);
		waited += 10;
	}
}

/* Sum of the zones' @field ("boost", "low") in /proc/zoneinfo, -1 on error. */
static long long pc_zoneinfo_total(const char *field)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	long long sum = 0, v;
	char line[256], name[32];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %31s %lld", name, &v) == 2 && !strcmp(name, field))
			sum += v;
	fclose(f);
	return sum;
}

static long long pc_boost_total(void)
{
	return pc_zoneinfo_total("boost");
}

long long pc_free_above(const char *mark)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	long long sum = 0, v, free = 0;
	char line[256], name[32], zone[32] = "";
	int node;

	if (!f)
		return LLONG_MIN;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &node, zone) == 2)
			continue;
		/* ZONE_DMA is kept from user pages by its lowmem reserve */
		if (!strcmp(zone, "DMA") || !zone[0])
			continue;
		if (sscanf(line, " pages free %lld", &v) == 1)
			free = v;
		else if (sscanf(line, " %31s %lld", name, &v) == 2 && !strcmp(name, mark))
			sum += free - v;	/* the mark follows "pages free" */
	}
	fclose(f);
	return sum;
}

/* The state letter of process @pid if it is a kswapd thread, else 0. */
static char pc_kswapd_state(const char *pid)
{
	char path[300], line[256], *s = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && strstr(line, "(kswapd"))
		s = strrchr(line, ')');
	fclose(f);
	return s && s[1] == ' ' ? s[2] : 0;
}

/*
 * Is every kswapd thread asleep (state S)?  -1 on error.  With @why, the
 * threads that are not, their state and wait channel.
 */
static int pc_kswapd_asleep(char *why, size_t len)
{
	char path[300], wchan[64] = "?", state;
	struct dirent *d;
	int seen = 0, asleep = 1;
	DIR *dir = opendir("/proc");
	size_t used = 0;
	FILE *f;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		state = d->d_name[0] >= '1' && d->d_name[0] <= '9' ?
			pc_kswapd_state(d->d_name) : 0;
		seen |= !!state;
		if (!state || state == 'S')
			continue;
		asleep = 0;
		snprintf(path, sizeof(path), "/proc/%s/wchan", d->d_name);
		f = fopen(path, "r");
		if (!f || !fgets(wchan, sizeof(wchan), f))
			strcpy(wchan, "?");
		if (f)
			fclose(f);
		if (why && used < len)
			used += snprintf(why + used, len - used, " pid %s state %c wchan %s",
					 d->d_name, state, wchan);
	}
	closedir(dir);
	return seen ? asleep : -1;
}

/*
 * Wake kswapd to work off a watermark boost.  A boost raised by an
 * allocation that may not wake kswapd (SLUB's first, high-order try at a
 * new slab clears __GFP_RECLAIM) stays until something else wakes it:
 * an allocation that takes a zone below its low watermark does.  Pages
 * are faulted in until the boost is gone or the free memory of the zones
 * user pages come from is half way from their low watermarks down to min
 * (never to min: no direct reclaim, no OOM kill; ZONE_DMA's free pages
 * do not count, its lowmem reserve keeps them from user pages), held for
 * at most 2 s while kswapd works, and freed again.
 */
static void pc_wake_kswapd(void)
{
	size_t n = (size_t)pc_memfree_pages(), i = 0;
	char *p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int held;

	if (p == MAP_FAILED)
		return;
	/* down to half way from low to min: below low wakes kswapd */
	while (i < n && pc_boost_total() > 0 && pc_free_above("min") > 0 &&
	       pc_free_above("low") + pc_free_above("min") > 0) {
		pc_touch(p + i * pc_page_size, n - i < 256 ? n - i : 256);
		i += 256;
	}
	for (held = 0; held < 2000 && pc_boost_total() > 0; held += 10)
		usleep(10 * 1000);
	munmap(p, n * pc_page_size);
}

int pc_wait_kswapd_idle(int timeout_ms)
{
	int waited = 0, asleep, boosted_asleep = 0, woken = 0;
	char why[256] = "";
	long long boost;

	for (;;) {
		boost = pc_boost_total();
		asleep = pc_kswapd_asleep(why, sizeof(why));
		if (boost == 0 && asleep == 1)
			return 0;
		if (waited >= timeout_ms) {
			tap_diag("after %d ms: boost %lld pages, kswapd%s; woken %d times",
				 waited, boost, asleep == 1 ? " all asleep" :
				 asleep < 0 ? " not found" : why, woken);
			return -1;
		}
		boosted_asleep = boost > 0 && asleep == 1 ? boosted_asleep + 10 : 0;
		if (boosted_asleep >= 2000) {
			tap_diag("a boost of %lld pages, kswapd asleep for 2 s: waking it",
				 boost);
			pc_wake_kswapd();
			boosted_asleep = 0;
			woken++;
		}
		usleep(10 * 1000);
		waited += 10;
	}
}

void pc_settle(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "3", 1) < 0)
			tap_diag("drop_caches: %s", strerror(errno));
		close(fd);
	}
	usleep(200 * 1000);
}

long long pc_read_range(int fd, long long off, long long bytes)
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

int pc_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ok = f && fputs(text, f) >= 0;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

void pc_read_line(const char *path, char *buf, int len)
{
	FILE *f = fopen(path, "r");

	if (f) {
		if (!fgets(buf, len, f))
			buf[0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}


int pc_cgroup_make(const char *dir)
{
	mkdir(PC_CGROOT, 0755);
	if (mount("none", PC_CGROOT, "cgroup2", 0, NULL) && errno != EBUSY) {
		tap_diag("mount cgroup2: %s (test.config has CONFIG_MEMCG)", strerror(errno));
		return -1;
	}
	if (pc_write_file(PC_CGROOT "/cgroup.subtree_control", "+memory")) {
		tap_diag("enable the memory controller: %s", strerror(errno));
		return -1;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		tap_diag("mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

long long pc_cgroup_value(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX], k[64];
	long long v = -1, x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!key && fscanf(f, "%lld", &x) == 1)
		v = x;
	while (key && fscanf(f, "%63s %lld", k, &x) == 2)
		if (!strcmp(k, key))
			v = x;
	fclose(f);
	return v;
}

void pc_color_census(int color)
{
	long file = 0, anon = 0, unmapped = 0, slab = 0, buddy = 0, none = 0, other = 0;
	int ff = open("/proc/kpageflags", O_RDONLY);
	uint64_t flags;
	off_t pfn;

	if (ff < 0)
		return;
	for (pfn = color; pread(ff, &flags, 8, pfn * 8) == 8; pfn += pc_nr_colors) {
		if (flags & (1ULL << KPF_LRU) && flags & (1ULL << KPF_ANON)) {
			anon++;
			unmapped += !(flags & (1ULL << KPF_MMAP));
		} else if (flags & (1ULL << KPF_LRU)) {
			file++;
		} else if (flags & (1ULL << KPF_SLAB)) {
			slab++;
		} else if (flags & (1ULL << KPF_BUDDY)) {
			buddy++;
		} else if (!flags) {
			none++;
		} else {
			other++;
		}
	}
	close(ff);
	tap_diag("colour %d's frames: %ld file LRU, %ld anon LRU (%ld unmapped), %ld slab, "
		 "%ld buddy block heads, %ld without flags (kernel, per-cpu lists, buddy "
		 "tails), %ld other", color, file, anon, unmapped, slab, buddy, none, other);
}

long long pc_parked(void)
{
	unsigned long long v;

	return pagecolor_read_counter("parked", &v) ? -1 : (long long)v;
}

uint64_t pc_kpageflags(uint64_t pfn)
{
	uint64_t flags = 0;
	FILE *f = fopen("/proc/kpageflags", "r");

	if (!f)
		return 0;
	if (fseek(f, (long)(pfn * sizeof(flags)), SEEK_SET) ||
	    fread(&flags, sizeof(flags), 1, f) != 1)
		flags = 0;
	fclose(f);
	return flags;
}

int pc_is_thp(const void *addr)
{
	uint64_t pfn;

	if (pagecolor_pfn(addr, &pfn))
		return 0;
	return !!(pc_kpageflags(pfn) & (1ULL << KPF_THP));
}

char *pc_huge_area(size_t len)
{
	char *m = mmap(NULL, len + PC_HUGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *h;

	if (m == MAP_FAILED)
		return NULL;
	h = (char *)(((uintptr_t)m + PC_HUGE - 1) & ~(PC_HUGE - 1));
	/* the slack before and after: munmap(h, len) then frees it all */
	if (h > m)
		munmap(m, h - m);
	munmap(h + len, m + PC_HUGE - h);
	if (madvise(h, len, MADV_HUGEPAGE)) {
		tap_diag("MADV_HUGEPAGE: %s", strerror(errno));
		munmap(h, len);
		return NULL;
	}
	return h;
}

size_t pc_take_huge(char *h, size_t len, uint64_t *pfns, int misses)
{
	int huge_order = pc_order_of(PC_HUGE / pc_page_size);
	size_t i, taken = 0;
	uint64_t pfn;

	for (i = 0; i < len / PC_HUGE && misses > 0; i++) {
		h[i * PC_HUGE] = 1;
		pfn = 0;
		if (pc_is_thp(h + i * PC_HUGE) && !pagecolor_pfn(h + i * PC_HUGE, &pfn))
			taken++;
		else if (!pfns || pc_free_blocks(huge_order, "DMA") == 0)
			misses--;
		if (pfns)
			pfns[i] = pfn;
	}
	return taken;
}

size_t pc_eat_large_blocks(void)
{
	size_t len = 1UL << 30;
	char *h = pc_huge_area(len);

	return h ? pc_take_huge(h, len, NULL, 1) : 0;
}

long pc_free_blocks(int order, const char *skip_zone)
{
	FILE *f = fopen("/proc/buddyinfo", "r");
	char line[512], zone[32];
	long total = 0, n;
	int o, off, used;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* "Node 0, zone   Normal   n0 n1 ... n10 " */
		if (sscanf(line, "Node %*d, zone %31s%n", zone, &off) != 1 ||
		    (skip_zone && !strcmp(zone, skip_zone)))
			continue;
		for (o = 0; sscanf(line + off, "%ld%n", &n, &used) == 1; o++, off += used)
			if (o >= order)
				total += n << (o - order);
	}
	fclose(f);
	return total;
}

int pc_make_free_blocks(int order, long want, int rounds, long *blocks, long long *parked)
{
	long long p;
	int round;

	for (round = 1; ; round++) {
		p = pc_wait_parked(1, 60000);
		if (parked)
			*parked = p;
		pc_write_file("/proc/sys/vm/compact_memory", "1");
		*blocks = pc_free_blocks(order, NULL);
		if (*blocks >= want || round >= rounds)
			return round;
		pc_settle();
		usleep(500 * 1000);	/* the per-cpu lists' periodic drain */
	}
}

char *pc_bound_pages(const char *list, size_t npages)
{
	pagecolor_set_t set = pc_set(list);
	char *p = mmap(NULL, npages * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (pagecolor_mbind(p, npages * pc_page_size, COLOR_MODE_BIND, &set, 0))
		return NULL;
	pc_touch(p, npages);
	return p;
}

void pc_child_touch_pfns(int color, size_t npages, int out, int hold)
{
	char list[16], *p, c;
	pagecolor_set_t set;
	uint64_t pfn;
	size_t i;

	snprintf(list, sizeof(list), "%d", color);
	set = pc_set(list);
	p = mmap(NULL, npages * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED || madvise(p, npages * pc_page_size, MADV_NOHUGEPAGE) ||
	    pagecolor_mbind(p, npages * pc_page_size, COLOR_MODE_BIND, &set, 0))
		_exit(20);
	signal(SIGBUS, SIG_DFL);
	for (i = 0; i < npages; i++) {
		p[i * pc_page_size] = 1;
		if (pagecolor_pfn(p + i * pc_page_size, &pfn) ||
		    write(out, &pfn, sizeof(pfn)) != sizeof(pfn))
			_exit(21);
	}
	while (hold >= 0 && read(hold, &c, 1) > 0)
		;
	_exit(0);
}

unsigned long pc_pageblock_pages(void)
{
	FILE *f = fopen("/proc/pagetypeinfo", "r");
	unsigned long n = 0;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pages per block: %lu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* "DMA32," of "Node 0, zone DMA32, type ..." is zone "DMA32". */
static int pc_zone_is(const char *token, const char *zone)
{
	size_t n = strlen(zone);

	return !strncmp(token, zone, n) && (token[n] == 0 || token[n] == ',');
}

long long pc_pagetype_free(const char *zone, const char *type, int order)
{
	FILE *f = fopen("/proc/pagetypeinfo", "r");
	char line[1024], z[32], t[32];
	long long total = -1, c;
	int node, off, used, o;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* "Node    0, zone    DMA32, type    Unmovable      5 ... " */
		if (sscanf(line, "Node %d, zone %31s type %31s%n", &node, z, t, &off) != 3 ||
		    node || !pc_zone_is(z, zone) || strcmp(t, type))
			continue;
		total = 0;
		for (o = 0;; o++, off += used) {
			while (line[off] == ' ' || line[off] == '>')
				off++;
			if (sscanf(line + off, "%lld%n", &c, &used) != 1)
				break;
			if (o >= order)
				total += c << (o - order);
		}
		break;
	}
	fclose(f);
	return total;
}

int pc_pagetype_blocks(const char *zone, const char *type)
{
	FILE *f = fopen("/proc/pagetypeinfo", "r");
	char line[1024], z[32], name[32];
	int col = -1, in = 0, node, off, used, i, n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* "Number of blocks type     Unmovable      Movable ..." */
		if (!strncmp(line, "Number of blocks type", 21)) {
			off = 21;
			for (i = 0; sscanf(line + off, "%31s%n", name, &used) == 1; i++, off += used)
				if (!strcmp(name, type))
					col = i;
			in = 1;
			continue;
		}
		if (!in || col < 0)
			continue;
		/* "Node 0, zone    DMA32           32          456 ..." */
		if (sscanf(line, "Node %d, zone %31s%n", &node, z, &off) != 2) {
			in = 0;
			continue;
		}
		if (node || !pc_zone_is(z, zone))
			continue;
		for (i = 0; i <= col && sscanf(line + off, "%d%n", &n, &used) == 1; i++)
			off += used;
		if (i <= col)
			n = -1;
		break;
	}
	fclose(f);
	return n;
}

/*
 * One page_owner record, as read() returns it: "Page allocated via order
 * N, ..., pid P, ..." and "PFN p type T Block b type T"; 0 when @buf holds
 * one, else -1.
 */
static int owner_record(const char *buf, struct pc_owner *o)
{
	const char *s = strstr(buf, "\nPFN ");
	const char *pid = strstr(buf, "pid ");
	long long p;

	/* the PFN in decimal (6.1) or hexadecimal (6.12) */
	if (sscanf(buf, "Page allocated via order %u", &o->order) != 1 || !s ||
	    sscanf(s, "\nPFN %lli type %*s Block %llu type %31s", &p, &o->block,
		   o->type) != 3)
		return -1;
	o->pfn = p;
	/* the first "pid " is the pid's: "tgid " follows it */
	o->pid = pid && pid < s ? strtol(pid + 4, NULL, 10) : -1;
	return 0;
}

int pc_owner_at(int fd, uint64_t pfn, struct pc_owner *o)
{
	char buf[4096];
	ssize_t len;

	/* read_page_owner() takes a non-zero offset for the frame to start at */
	if (fd < 0 || !pfn)
		return -1;
	len = pread(fd, buf, sizeof(buf) - 1, (off_t)pfn);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	return owner_record(buf, o) || o->pfn != pfn ? -1 : 0;
}

long pc_owner_scan(uint64_t start, uint64_t end, unsigned char *used, char *types,
		   size_t nblocks)
{
	int fd = open("/sys/kernel/debug/page_owner", O_RDONLY);
	struct pc_owner o;
	unsigned long long i;
	char buf[4096];
	ssize_t len;
	long n = 0;

	memset(used, 0, end - start);
	memset(types, 0, nblocks);
	if (fd < 0)
		return -1;
	while ((len = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[len] = 0;
		if (owner_record(buf, &o) || o.order > 20)
			continue;
		n++;
		for (i = o.pfn; i < o.pfn + (1ULL << o.order); i++)
			if (i >= start && i < end)
				used[i - start] = 1;
		if (o.block < nblocks)
			types[o.block] = o.type[0];
	}
	close(fd);
	return n;
}

char pc_owner_block_type(uint64_t pfn)
{
	int fd = open("/sys/kernel/debug/page_owner", O_RDONLY);
	struct pc_owner o;
	int r = pc_owner_at(fd, pfn, &o);

	if (fd >= 0)
		close(fd);
	return r ? 0 : o.type[0];
}

/* _exit() is async-signal-safe; nothing else of the child's is needed. */
static void pc_sigbus_exit(int sig)
{
	(void)sig;
	_exit(PC_EXIT_SIGBUS);
}

char *pc_child_bound(const char *list, size_t npages, int fail)
{
	pagecolor_set_t set = pc_set(list);
	struct sigaction sa;
	char *p;

	p = mmap(NULL, npages * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED ||
	    pagecolor_mbind(p, npages * pc_page_size, COLOR_MODE_BIND, &set, 0))
		_exit(fail);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pc_sigbus_exit;
	if (sigaction(SIGBUS, &sa, NULL))
		_exit(fail);
	return p;
}

char *pc_child_bound_touch(const char *list, size_t npages, int fail)
{
	char *p = pc_child_bound(list, npages, fail);

	pc_touch(p, npages);
	return p;
}

/*
 * /proc/zoneinfo, opened once and read again with pread() into a static
 * buffer, so that sampling it allocates nothing while another process
 * takes the last free pages (color_reserve).
 */
static int zoneinfo_fd = -1;
static char zoneinfo_buf[1 << 16];

int pc_zone_info(const char *name, struct pc_zone_info *zi)
{
	char zname[32], *line, *next;
	int in = 0, node;
	ssize_t len;

	memset(zi, 0, sizeof(*zi));
	if (zoneinfo_fd < 0)
		zoneinfo_fd = open("/proc/zoneinfo", O_RDONLY);
	if (zoneinfo_fd < 0)
		return -1;
	len = pread(zoneinfo_fd, zoneinfo_buf, sizeof(zoneinfo_buf) - 1, 0);
	if (len <= 0)
		return -1;
	zoneinfo_buf[len] = 0;
	for (line = zoneinfo_buf; line && *line; line = next) {
		long long a;
		char *s;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (sscanf(line, "Node %d, zone %31s", &node, zname) == 2) {
			in = node == 0 && !strcmp(zname, name);
			zi->found |= in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, " pages free %lld", &a) == 1)
			zi->free = a;
		else if (sscanf(line, " min %lld", &a) == 1)
			zi->min = a;
		else if (sscanf(line, " low %lld", &a) == 1)
			zi->low = a;
		else if (sscanf(line, " high %lld", &a) == 1)
			zi->high = a;
		else if (sscanf(line, " spanned %lld", &a) == 1)
			zi->spanned = a;
		else if (sscanf(line, " start_pfn: %lld", &a) == 1)
			zi->start_pfn = a;
		else if ((s = strstr(line, "protection: (")))
			for (s += strlen("protection: ("); *s && *s != ')'; s++)
				if (sscanf(s, "%lld", &a) == 1) {
					if (a > zi->protection)
						zi->protection = a;
					s += strcspn(s, ",)") - 1;
				}
	}
	return zi->found ? 0 : -1;
}

pid_t pc_start_holder(void (*fn)(void *), void *arg)
{
	int fds[2];
	pid_t pid;
	char c = 0;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		fn(arg);
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

int pc_pfn_node(uint64_t pfn)
{
	long long spanned = -1, a;
	char line[256], zone[32];
	int node = -1, n = -1;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &node, zone) == 2) {
			spanned = -1;
			continue;
		}
		if (sscanf(line, " spanned %lld", &a) == 1) {
			spanned = a;
		} else if (sscanf(line, " start_pfn: %lld", &a) == 1 && spanned > 0 &&
			   (long long)pfn >= a && (long long)pfn < a + spanned) {
			n = node;
			break;
		}
	}
	fclose(f);
	return n;
}

int pc_node_cpu(int node)
{
	char path[96], buf[64];
	int cpu = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%d", &cpu) != 1)
		cpu = -1;
	fclose(f);
	return cpu;
}

int pc_run_on(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

void pc_stat_refresh(void)
{
	pc_write_file("/proc/sys/vm/stat_refresh", "1");
}

char *pc_bound_vma(pid_t pid, const char *colours, size_t npages)
{
	char path[64], line[512];
	char *addr = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/color_maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char mode[16], cols[64];

		if (sscanf(line, "%lx-%lx %15s %63s", &s, &e, mode, cols) == 4 &&
		    !strcmp(mode, "bind") && !strcmp(cols, colours) &&
		    e - s == npages * (unsigned long)pc_page_size) {
			addr = (char *)s;
			break;
		}
	}
	if (f)
		fclose(f);
	return addr;
}

pid_t pc_child_start(int (*body)(void *arg, int cmd, int ans), void *arg,
		     char **addr, int *cmd, int *ans)
{
	int down[2], up[2];
	pid_t pid;

	*addr = NULL;
	*cmd = *ans = -1;
	if (pipe(down))
		return -1;
	if (pipe(up)) {
		close(down[0]);
		close(down[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		_exit(body(arg, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	if (pid < 0) {
		close(down[1]);
		close(up[0]);
		return -1;
	}
	*cmd = down[1];
	*ans = up[0];
	if (read(up[0], addr, sizeof(*addr)) != sizeof(*addr))
		*addr = NULL;
	return pid;
}

void pc_child_stop(pid_t pid, int cmd, int ans, size_t *answer)
{
	char x = 1;

	if (answer && (write(cmd, &x, 1) != 1 ||
		       read(ans, answer, sizeof(*answer)) != sizeof(*answer)))
		*answer = (size_t)-1;
	if (cmd >= 0)
		close(cmd);
	if (ans >= 0)
		close(ans);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

long pc_smaps_value(const void *addr, const char *field)
{
	char line[256];
	size_t len = strlen(field);
	unsigned long start;
	long value = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		/* a VMA's header line: "start-end perms ..." */
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' ') &&
		    sscanf(line, "%lx-", &start) == 1)
			in = start == (unsigned long)addr;
		else if (in && !strncmp(line, field, len) && line[len] == ':') {
			value = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return value;
}

/*-------------------------------------------------------------------------
 *
 * resctrl.c
 *		Confine weak-locality plans to a few L3 ways through resctrl, the
 *		hardware counterpart of MCC-DB's page colouring (section 6.1).
 *
 * Layout used (Documentation/arch/x86/resctrl.rst): info/L3/cbm_mask is the
 * full capacity bitmask in hex, info/L3/min_cbm_bits the fewest bits a mask
 * may have, schemata holds lines like "L3:0=fffff;1=fffff", a group is a
 * directory made with mkdir, and writing a pid to its tasks file moves the
 * task.  Not run on such hardware here: tested against a directory laid
 * out the same way.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resctrl.h"

static int	fail(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int
read_file(const char *root, const char *name, char *buf, size_t len)
{
	char		path[4096];
	FILE	   *f;
	size_t		n;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

static int
write_file(const char *path, const char *text)
{
	FILE	   *f = fopen(path, "w");
	int			ok;

	if (f == NULL)
		return -1;
	ok = fputs(text, f) >= 0;
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

int
mccdb_resctrl_available(const char *root)
{
	char		buf[64];
	struct stat st;
	char		path[4096];

	snprintf(path, sizeof(path), "%s/schemata", root);
	return read_file(root, "info/L3/cbm_mask", buf, sizeof(buf)) == 0 &&
		stat(path, &st) == 0;
}

/* The L3 domain ids of the default group's schemata, e.g. "0", "1". */
static int
l3_domains(const char *schemata, int *ids, int max)
{
	const char *p = strstr(schemata, "L3:");
	int			n = 0;

	if (p == NULL)
		return 0;
	p += 3;
	while (*p && *p != '\n' && n < max)
	{
		char	   *end;
		long		id = strtol(p, &end, 10);

		if (end == p || *end != '=')
			break;
		ids[n++] = (int) id;
		p = strchr(end, ';');
		if (p == NULL)
			break;
		p++;
	}
	return n;
}

int
mccdb_resctrl_setup(const char *root, const char *group, int ways,
					char *err, size_t errlen)
{
	char		buf[4096];
	char		line[4096];
	char		path[4096];
	unsigned long full;
	int			bits = 0;
	int			min_bits = 1;
	int			ids[64];
	int			n,
				i;
	size_t		used;
	unsigned long mask;

	if (!mccdb_resctrl_available(root))
		return fail(err, errlen, "%s is not a resctrl mount with L3 allocation", root);
	if (read_file(root, "info/L3/cbm_mask", buf, sizeof(buf)) != 0)
		return fail(err, errlen, "cannot read %s/info/L3/cbm_mask: %s", root, strerror(errno));
	full = strtoul(buf, NULL, 16);
	for (; full >> bits; bits++)
		;
	if (read_file(root, "info/L3/min_cbm_bits", buf, sizeof(buf)) == 0)
		min_bits = atoi(buf) > 0 ? atoi(buf) : 1;
	if (ways < min_bits)
		ways = min_bits;
	if (ways <= 0 || ways >= bits)
		return fail(err, errlen, "cannot confine to %d of %d cache ways", ways, bits);
	mask = (1UL << ways) - 1;

	if (read_file(root, "schemata", buf, sizeof(buf)) != 0)
		return fail(err, errlen, "cannot read %s/schemata: %s", root, strerror(errno));
	n = l3_domains(buf, ids, 64);
	if (n == 0)
		return fail(err, errlen, "no L3 line in %s/schemata", root);

	snprintf(path, sizeof(path), "%s/%s", root, group);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail(err, errlen, "cannot create resctrl group %s: %s", path, strerror(errno));

	used = snprintf(line, sizeof(line), "L3:");
	for (i = 0; i < n && used < sizeof(line); i++)
		used += snprintf(line + used, sizeof(line) - used, "%s%d=%lx",
						 i ? ";" : "", ids[i], mask);
	if (used < sizeof(line) - 1)
		strcat(line, "\n");
	snprintf(path, sizeof(path), "%s/%s/schemata", root, group);
	if (write_file(path, line) != 0)
		return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

int
mccdb_resctrl_move(const char *root, const char *group, pid_t pid,
				   char *err, size_t errlen)
{
	char		path[4096];
	char		text[32];

	if (group)
		snprintf(path, sizeof(path), "%s/%s/tasks", root, group);
	else
		snprintf(path, sizeof(path), "%s/tasks", root);
	snprintf(text, sizeof(text), "%d\n", (int) pid);
	if (write_file(path, text) != 0)
		return fail(err, errlen, "cannot move pid %d to %s: %s", (int) pid, path, strerror(errno));
	return 0;
}

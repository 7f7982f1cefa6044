/*
 * Unit test of resctrl.c against a directory laid out like /sys/fs/resctrl.
 * Prints TAP.  (No CAT/L3-QoS hardware here: this is how far it can be run.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../resctrl.h"
#include "../tap.h"


static void
put(const char *root, const char *name, const char *text)
{
	char		path[4096];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static char *
get(const char *root, const char *name)
{
	static char buf[4096];
	char		path[4096];
	FILE	   *f;
	size_t		len;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int
main(void)
{
	char		root[] = "/tmp/mccdb-resctrl-XXXXXX";
	char		path[4096];
	char		err[256];
	char	   *s;

	printf("TAP version 13\n");
	if (!mkdtemp(root))
		return 1;

	ok(!mccdb_resctrl_available(root), "an empty directory is not resctrl");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, err, sizeof(err)) != 0 &&
	   strstr(err, "not a resctrl mount") != NULL, "setup on it fails with a clear message");

	snprintf(path, sizeof(path), "%s/info", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/info/L3", root);
	mkdir(path, 0755);
	put(root, "info/L3/cbm_mask", "fff\n");
	put(root, "info/L3/min_cbm_bits", "1\n");
	put(root, "schemata", "    MB:0=100;1=100\n    L3:0=fff;1=fff\n");
	put(root, "tasks", "");
	ok(mccdb_resctrl_available(root), "a resctrl-like layout is recognised");

	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, err, sizeof(err)) == 0, "group is set up");
	s = get(root, "mccdb_weak/schemata");
	ok(s && strcmp(s, "L3:0=3;1=3\n") == 0, "group schemata: lowest 2 ways in both L3 domains");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 3, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/schemata"), "L3:0=7;1=7\n") == 0,
	   "setting up again reuses the group and rewrites its mask");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 12, err, sizeof(err)) != 0 &&
	   strstr(err, "12 of 12") != NULL, "all ways cannot be a confinement");

	put(root, "info/L3/min_cbm_bits", "2\n");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 1, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/schemata"), "L3:0=3;1=3\n") == 0,
	   "fewer ways than min_cbm_bits are raised to it");

	ok(mccdb_resctrl_move(root, "mccdb_weak", 4242, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/tasks"), "4242\n") == 0, "a pid moves into the group");
	ok(mccdb_resctrl_move(root, NULL, 4242, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "tasks"), "4242\n") == 0, "and back to the default group");
	ok(mccdb_resctrl_move("/nonexistent-mccdb", "g", 1, err, sizeof(err)) != 0 &&
	   strstr(err, "cannot move pid 1") != NULL, "a failed move says which pid and where");

	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	if (system(path) != 0)
		return 1;
	return tap_done();
}

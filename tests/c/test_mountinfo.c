/* test_mountinfo.c - the scope of locks at a path from mount-table text
 * (lines as /proc/self/mountinfo shows them on clusters), and from this
 * machine's table through cf_file_lock_scope. */
#include <stdio.h>
#include <string.h>

#include "colfile.h"
#include "harness.h"
#include "mountinfo.h"

static const char *const TABLE =
    "22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw,errors=remount-ro\n"
    "25 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "98 22 0:51 / /lustre/scratch rw,relatime shared:40 - lustre 10.1.0.1@o2ib:10.1.0.2@o2ib:/scratch "
    "rw,flock,lazystatfs,encrypt\n"
    "99 22 0:52 / /lustre/work rw,relatime shared:41 - lustre 10.1.0.1@o2ib:/work rw,localflock,lazystatfs\n"
    "100 22 0:53 / /lustre/old rw,relatime shared:42 - lustre 10.1.0.1@o2ib:/old rw,noflock,lazystatfs\n"
    "101 22 0:54 / /gpfs/fs1 rw,relatime shared:43 - gpfs fs1 rw\n"
    "102 22 0:55 / /beegfs rw,relatime shared:44 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf\n"
    "103 22 0:56 / /home rw,relatime shared:45 - nfs4 srv:/export/home "
    "rw,vers=4.2,rsize=1048576,proto=tcp,sec=sys,local_lock=none,addr=10.0.0.5\n"
    "104 22 0:57 / /nfs/scratch rw,relatime shared:46 - nfs srv:/scratch rw,vers=3,nolock,proto=tcp,addr=10.0.0.6\n"
    "105 22 0:58 / /nfs/loc rw,relatime shared:47 - nfs4 srv:/loc rw,vers=4.1,local_lock=all,addr=10.0.0.7\n"
    "106 22 0:59 / /mnt/my\\040disk rw,relatime shared:48 - xfs /dev/sdb1 rw,attr2\n"
    "107 98 0:60 / /lustre/scratch/proj rw,relatime shared:49 - tmpfs tmpfs rw\n"
    "108 22 0:61 / /lustre/scratch2 rw,relatime shared:50 - lustre 10.1.0.1@o2ib:/s2 rw,noflock\n"
    "109 22 0:62 / /stacked rw - nfs srv:/a rw,nolock\n"
    "110 22 0:63 / /stacked rw - nfs srv:/b rw\n"
    "garbage line without separator\n";

static void expect(const char *path, const char *scope, const char *fs)
{
    char got_fs[64];
    const char *got = cf__lock_scope_in(TABLE, path, got_fs, sizeof got_fs);
    if (strcmp(got, scope) != 0 || strcmp(got_fs, fs) != 0) {
        fprintf(stderr, "%s: scope %s on %s, expected %s on %s\n", path, got, got_fs, scope, fs);
        cf_test_failures++;
    }
}

static void test_scopes(void)
{
    expect("/tmp/x", "cluster", "ext4");
    expect("/lustre/scratch/run", "cluster", "lustre");
    expect("/lustre/work/run/f", "node", "lustre");
    expect("/lustre/old", "none", "lustre");
    expect("/gpfs/fs1/a", "cluster", "gpfs");
    expect("/beegfs/a", "node", "beegfs");
    expect("/home/u/f", "cluster", "nfs4");
    expect("/nfs/scratch/f", "node", "nfs");
    expect("/nfs/loc/f", "node", "nfs4");
}

static void test_path_matching(void)
{
    expect("/lustre/scratch2/x", "none", "lustre"); /* a name prefix is no parent */
    expect("/lustre/scratch/proj/x", "cluster", "tmpfs"); /* the deepest mount */
    expect("/mnt/my disk/f", "cluster", "xfs");         /* \040 is a space */
    expect("/mnt/my", "cluster", "ext4");
    expect("/stacked/f", "cluster", "nfs"); /* the last mount on a point hides the others */
    char fs[64];
    CHECK_EQ_STR(cf__lock_scope_in("", "/x", fs, sizeof fs), "unknown");
    CHECK_EQ_STR(fs, "");
}

static void test_this_machine(void)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_READ, &err), &err);
    const char *s = cf_file_lock_scope(f);
    CHECK(strcmp(s, "cluster") == 0 || strcmp(s, "node") == 0 || strcmp(s, "none") == 0);
    cf_file_close(f);
    CHECK_EQ_STR(cf_file_lock_scope(NULL), "unknown");
}

CF_TESTS(CF_TEST(test_scopes), CF_TEST(test_path_matching), CF_TEST(test_this_machine))

// SPDX-License-Identifier: MIT
/*
 * cglabels: the labels of real cgroup path shapes (systemd units, docker,
 * podman, containerd, CRI-O, kubelet with either cgroup driver), odd and
 * non-matching paths, --labels words, and the container names file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "serve/cglabels.h"
#include "host/cgnames.h"
#include "testutil.h"

#define ID1 "4b1f0a7c2e9d83f5a6b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f70"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
/* A pod UID as the API has it, and as the systemd driver writes it. */
#define UID "8a6f1e2b-4c3d-4e5f-9a0b-1c2d3e4f5a6b"
#define UID_ "8a6f1e2b_4c3d_4e5f_9a0b_1c2d3e4f5a6b"
/* A static pod's UID: the hash of its manifest. */
#define STATIC_UID "e3b0c44298fc1c149afbf4c8996fb924"

/* path must give exactly these labels (NULL: absent). */
static void expect(const char *path, const char *unit, const char *id, const char *uid,
		   const char *qos)
{
	unsigned int want = (unit ? CGLABELS_UNIT : 0) | (id ? CGLABELS_CONTAINER : 0) |
			    (uid ? CGLABELS_POD : 0);
	struct cgpath_labels v;
	unsigned int got = cglabels__from_path(path, &v);

	if (got != want)
		fail_msg("'%s': found labels %#x, expected %#x (unit '%s', id '%s', uid '%s')",
			 path, got, want, v.unit, v.container_id, v.pod_uid);
	assert_string_equal(v.unit, unit ?: "");
	assert_string_equal(v.container_id, id ?: "");
	assert_string_equal(v.pod_uid, uid ?: "");
	if (qos)
		assert_string_equal(v.qos ?: "(null)", qos);
	else
		assert_null(v.qos);
}

static void test_cglabels__systemd_service(void **state)
{
	(void)state;
	expect("/system.slice/nginx.service", "nginx.service", NULL, NULL, NULL);
	expect("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service", NULL,
	       NULL, NULL);
	/* Escaped names are kept as systemd wrote them. */
	expect("/system.slice/system-systemd\\x2dfsck.slice/systemd-fsck@dev-vda1.service",
	       "systemd-fsck@dev-vda1.service", NULL, NULL, NULL);
	expect("/system.slice/ssh.socket", "ssh.socket", NULL, NULL, NULL);
	expect("/system.slice/home.mount", "home.mount", NULL, NULL, NULL);
	expect("/system.slice/dev-vda2.swap", "dev-vda2.swap", NULL, NULL, NULL);
}

/* Sessions, the user manager and its own units: the innermost unit. */
static void test_cglabels__user_slices(void **state)
{
	(void)state;
	expect("/user.slice/user-1000.slice/session-3.scope", "session-3.scope", NULL, NULL, NULL);
	expect("/user.slice/user-1000.slice/user@1000.service", "user@1000.service", NULL, NULL,
	       NULL);
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope", "x.scope", NULL,
	       NULL, NULL);
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/"
	       "app-gnome-org.gnome.Terminal-4242.scope",
	       "app-gnome-org.gnome.Terminal-4242.scope", NULL, NULL, NULL);
	expect("/user.slice/user-1000.slice/user@1000.service/session.slice/pipewire.service",
	       "pipewire.service", NULL, NULL, NULL);
}

static void test_cglabels__init_scope(void **state)
{
	(void)state;
	expect("/init.scope", "init.scope", NULL, NULL, NULL);
	expect("/user.slice/user-1000.slice/user@1000.service/init.scope", "init.scope", NULL, NULL,
	       NULL);
}

/* A service's own subgroups (Delegate=yes) are still the service. */
static void test_cglabels__delegated_subgroup(void **state)
{
	(void)state;
	expect("/system.slice/nginx.service/worker", "nginx.service", NULL, NULL, NULL);
	expect("/system.slice/nginx.service/a/b/c", "nginx.service", NULL, NULL, NULL);
}

/* Slices hold no processes: a slice alone is no unit. */
static void test_cglabels__no_match(void **state)
{
	(void)state;
	expect("/", NULL, NULL, NULL, NULL);
	expect("", NULL, NULL, NULL, NULL);
	expect("/system.slice", NULL, NULL, NULL, NULL);
	expect("/user.slice/user-1000.slice", NULL, NULL, NULL, NULL);
	expect("/khbpf-it-1/worker", NULL, NULL, NULL, NULL);
	expect("(overflow)", NULL, NULL, NULL, NULL);
	expect("(cgroup id 4242)", NULL, NULL, NULL, NULL);
	expect("/kubepods.slice", NULL, NULL, NULL, NULL);
	expect("/kubepods/burstable", NULL, NULL, NULL, NULL);
}

static void test_cglabels__docker(void **state)
{
	(void)state;
	/* systemd cgroup driver */
	expect("/system.slice/docker-" ID1 ".scope", "docker-" ID1 ".scope", ID1, NULL, NULL);
	/* cgroupfs driver */
	expect("/docker/" ID1, NULL, ID1, NULL, NULL);
	/* docker in docker: the innermost container */
	expect("/docker/" ID1 "/docker/" ID2, NULL, ID2, NULL, NULL);
	/* a container running systemd: its unit, and the container */
	expect("/system.slice/docker-" ID1 ".scope/system.slice/nginx.service", "nginx.service",
	       ID1, NULL, NULL);
}

static void test_cglabels__podman(void **state)
{
	(void)state;
	expect("/machine.slice/libpod-" ID1 ".scope", "libpod-" ID1 ".scope", ID1, NULL, NULL);
	/* crun's subgroup for the container's processes */
	expect("/machine.slice/libpod-" ID1 ".scope/container", "libpod-" ID1 ".scope", ID1, NULL,
	       NULL);
	/* rootless */
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2 ".scope",
	       "libpod-" ID2 ".scope", ID2, NULL, NULL);
	/* cgroupfs driver */
	expect("/libpod_parent/libpod-" ID1, NULL, ID1, NULL, NULL);
	/* conmon watches the container from outside it */
	expect("/machine.slice/libpod-conmon-" ID1 ".scope", "libpod-conmon-" ID1 ".scope", NULL,
	       NULL, NULL);
}

/* containerd's CRI plugin and CRI-O under the kubelet's systemd driver. */
static void test_cglabels__cri_systemd(void **state)
{
	(void)state;
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/cri-containerd-" ID1 ".scope",
	       "cri-containerd-" ID1 ".scope", ID1, UID, "Burstable");
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice/crio-" ID2 ".scope",
	       "crio-" ID2 ".scope", ID2, UID, "BestEffort");
	/* Guaranteed pods sit right under kubepods.slice. */
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID1 ".scope",
	       "cri-containerd-" ID1 ".scope", ID1, UID, "Guaranteed");
	/* The pod's own slice, and CRI-O's conmon beside the container. */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
	       NULL, NULL, UID, "Burstable");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/crio-conmon-" ID2 ".scope",
	       "crio-conmon-" ID2 ".scope", NULL, UID, "Burstable");
	/* A kubelet with --cgroup-root (kind nodes: /kubelet). */
	expect("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	       "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID1 ".scope",
	       "cri-containerd-" ID1 ".scope", ID1, UID, "BestEffort");
	/* A static pod's UID is a 32-digit hash. */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID
	       ".slice/cri-containerd-" ID1 ".scope",
	       "cri-containerd-" ID1 ".scope", ID1, STATIC_UID, "Burstable");
}

/* The kubelet's cgroupfs driver: pods by position under kubepods. */
static void test_cglabels__kubepods_cgroupfs(void **state)
{
	(void)state;
	expect("/kubepods/besteffort/pod" UID "/" ID1, NULL, ID1, UID, "BestEffort");
	expect("/kubepods/burstable/pod" UID "/" ID1, NULL, ID1, UID, "Burstable");
	expect("/kubepods/pod" UID "/" ID1, NULL, ID1, UID, "Guaranteed");
	expect("/kubepods/burstable/pod" UID "/crio-" ID2, NULL, ID2, UID, "Burstable");
	expect("/kubepods/burstable/pod" STATIC_UID, NULL, NULL, STATIC_UID, "Burstable");
	expect("/kubelet/kubepods/pod" UID "/" ID1, NULL, ID1, UID, "Guaranteed");
	/* Not where the kubelet puts pods. */
	expect("/kubepods/other/pod" UID "/" ID1, NULL, ID1, NULL, NULL);
	expect("/kubepods/burstable/x/pod" UID, NULL, NULL, NULL, NULL);
	expect("/pods/pod" UID "/" ID1, NULL, ID1, NULL, NULL);
	expect("/kubepods/burstable/besteffort/pod" UID, NULL, NULL, NULL, NULL);
}

/* cgroup v1: the same shapes below a controller's mount, or as /proc/PID/cgroup has them. */
static void test_cglabels__v1_paths(void **state)
{
	(void)state;
	expect("/sys/fs/cgroup/cpu,cpuacct/docker/" ID1, NULL, ID1, NULL, NULL);
	expect("/sys/fs/cgroup/memory/system.slice/nginx.service", "nginx.service", NULL, NULL,
	       NULL);
	expect("/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod" UID "/" ID1, NULL, ID1, UID,
	       "Burstable");
	expect("/sys/fs/cgroup/systemd/kubepods.slice/kubepods-pod" UID_
	       ".slice/cri-containerd-" ID2 ".scope",
	       "cri-containerd-" ID2 ".scope", ID2, UID, "Guaranteed");
}

/* Near misses: each shape is matched exactly or not at all. */
static void test_cglabels__odd_shapes(void **state)
{
	char longunit[300];

	(void)state;
	/* Ids of the wrong length or case, and runtimes that are not named. */
	expect("/docker/" ID1 "0", NULL, NULL, NULL, NULL);
	expect("/docker/4b1f0a7c2e9d83f5a6b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7", NULL,
	       NULL, NULL, NULL);
	expect("/docker/4B1F0A7C2E9D83F5A6B0C1D2E3F405162738495A6B7C8D9E0F1A2B3C4D5E6F70", NULL,
	       NULL, NULL, NULL);
	expect("/docker/4b1f0a7c2e9d", NULL, NULL, NULL, NULL);
	expect("/system.slice/docker-" ID1 ".scopex", NULL, NULL, NULL, NULL);
	expect("/system.slice/docker-.scope", "docker-.scope", NULL, NULL, NULL);
	expect("/system.slice/rkt-" ID1 ".scope", "rkt-" ID1 ".scope", NULL, NULL, NULL);
	expect("/system.slice/docker-" ID1 ".service", "docker-" ID1 ".service", NULL, NULL, NULL);
	/* Not unit names. */
	expect("/system.slice/.service", NULL, NULL, NULL, NULL);
	expect("/system.slice/my app.service", NULL, NULL, NULL, NULL);
	expect("/system.slice/nginx.services", NULL, NULL, NULL, NULL);
	memset(longunit, 'a', sizeof(longunit));
	memcpy(longunit + sizeof(longunit) - 9, ".service", 9);
	expect(longunit, NULL, NULL, NULL, NULL);
	/* Pod UIDs: a UUID, '_' or '-', or 32 hex digits; nothing else. */
	expect("/kubepods.slice/kubepods-podxyz.slice", NULL, NULL, NULL, NULL);
	expect("/kubepods.slice/kubepods-pod8a6f1e2b_4c3d_4e5f_9a0b_1c2d3e4f5a6.slice", NULL, NULL,
	       NULL, NULL);
	expect("/kubepods.slice/kubepods-pod8a6f1e2b4c3d_4e5f_9a0b_1c2d3e4f5a6bb.slice", NULL, NULL,
	       NULL, NULL);
	assert_int_equal(cglabels__from_path("/kubepods.slice/kubepods-pod8A6F1E2B_4C3D_4E5F_"
					     "9A0B_1C2D3E4F5A6B.slice",
					     &(struct cgpath_labels){ 0 }),
			 0);
	/* One driver writes the whole UID: separators mixed are not one (found by fuzz_cglabels). */
	expect("/kubepods/pod8a6f1e2b-4c3d_4e5f-9a0b-1c2d3e4f5a6b/" ID1, NULL, ID1, NULL, NULL);
	expect("/kubepods.slice/kubepods-pod8a6f1e2b_4c3d_4e5f_9a0b-1c2d3e4f5a6b.slice", NULL, NULL,
	       NULL, NULL);
	expect("/kubepods.slice/kubepods-guaranteed-pod" UID_ ".slice", NULL, NULL, NULL, NULL);
	expect("/kubepods.slice/mykubepods-pod" UID_ ".slice", NULL, NULL, NULL, NULL);
	expect("/kubepods.slice/kubepods-burstable-pod" UID_ ".scope",
	       "kubepods-burstable-pod" UID_ ".scope", NULL, NULL, NULL);
	expect("/pod" UID_ ".slice", NULL, NULL, NULL, NULL);
	/* Repeated, leading and trailing slashes change nothing. */
	expect("//system.slice///docker-" ID1 ".scope/", "docker-" ID1 ".scope", ID1, NULL, NULL);
	expect("system.slice/nginx.service", "nginx.service", NULL, NULL, NULL);
}

static void test_cglabels__parse_list(void **state)
{
	unsigned int m = 99;
	char bad[80];

	(void)state;
	assert_int_equal(cglabels__parse_list("unit,container,pod", &m, bad, sizeof(bad)), 0);
	assert_int_equal(m, CGLABELS_ALL);
	assert_int_equal(cglabels__parse_list("pod", &m, bad, sizeof(bad)), 0);
	assert_int_equal(m, CGLABELS_POD);
	assert_int_equal(cglabels__parse_list("container,unit,unit", &m, bad, sizeof(bad)), 0);
	assert_int_equal(m, CGLABELS_CONTAINER | CGLABELS_UNIT);
	assert_int_equal(cglabels__parse_list("all", &m, bad, sizeof(bad)), 0);
	assert_int_equal(m, CGLABELS_ALL);
	assert_int_equal(cglabels__parse_list("unit,pods", &m, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "pods");
	assert_int_equal(m, 0);
	assert_int_equal(cglabels__parse_list("", &m, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "");
	assert_int_equal(cglabels__parse_list("unit,", &m, bad, sizeof(bad)), -EINVAL);
	assert_int_equal(cglabels__parse_list(",unit", &m, bad, sizeof(bad)), -EINVAL);
	assert_int_equal(cglabels__parse_list("Unit", &m, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "Unit");
}

static struct cglabels *labels_new(unsigned int which, const char *names, int want)
{
	struct cglabels_opts o = { .sz = sizeof(o), .which = which, .container_names = names };
	struct cglabels *c = NULL;
	char err[512] = "";

	assert_int_equal(cglabels__new(&c, &o, err, sizeof(err)), want);
	if (want)
		assert_null(c);
	else
		assert_non_null(c);
	return c;
}

/* Only the chosen labels, in their fixed order, and names where the file has them. */
static void test_cglabels__for_path(void **state)
{
	const char *path = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
			   ".slice/cri-containerd-" ID1 ".scope";
	char *root = tree_new("cglabels"), file[PATH_MAX];
	struct prom_label l[CGLABELS_MAX_LABELS];
	struct cgpath_labels v;
	struct cglabels *c;

	(void)state;
	c = labels_new(CGLABELS_ALL, NULL, 0);
	assert_int_equal(cglabels__for_path(c, path, &v, l), 4);
	assert_string_equal(l[0].name, "unit");
	assert_string_equal(l[0].value, "cri-containerd-" ID1 ".scope");
	assert_string_equal(l[1].name, "container_id");
	assert_string_equal(l[1].value, ID1);
	assert_string_equal(l[2].name, "pod_uid");
	assert_string_equal(l[2].value, UID);
	assert_string_equal(l[3].name, "qos");
	assert_string_equal(l[3].value, "Burstable");
	assert_int_equal(cglabels__for_path(c, "/system.slice", &v, l), 0);
	assert_int_equal(cglabels__nr_names(c), 0);
	assert_null(cglabels__name(c, ID1));
	cglabels__free(c);

	c = labels_new(CGLABELS_POD, NULL, 0);
	assert_int_equal(cglabels__for_path(c, path, &v, l), 2);
	assert_string_equal(l[0].name, "pod_uid");
	cglabels__free(c);

	tree_put(root, "names.json", "{\"" ID1 "\": \"web\", \"" ID2 "\": \"db\"}\n");
	snprintf(file, sizeof(file), "%s/names.json", root);
	c = labels_new(CGLABELS_CONTAINER | CGLABELS_UNIT, file, 0);
	assert_int_equal(cglabels__nr_names(c), 2);
	assert_int_equal(cglabels__for_path(c, path, &v, l), 3);
	assert_string_equal(l[1].name, "container_id");
	assert_string_equal(l[2].name, "container_name");
	assert_string_equal(l[2].value, "web");
	assert_int_equal(cglabels__for_path(c, "/docker/" ID2, &v, l), 2);
	assert_string_equal(l[1].value, "db");
	cglabels__free(c);

	labels_new(0x8, NULL, -EINVAL);
	tree_free(root);
}

/* The names file: one line naming the file and what is wrong, for each way it can be. */
static void expect_bad_file(const char *root, const char *text, int want, const char *msg)
{
	struct cgnames *n = NULL;
	char file[PATH_MAX], err[512] = "";

	snprintf(file, sizeof(file), "%s/bad.json", root);
	unlink(file);
	if (text)
		tree_put(root, "bad.json", text);
	assert_int_equal(cgnames__load(&n, file, err, sizeof(err)), want);
	assert_null(n);
	if (!strstr(err, msg) || !strstr(err, file) || strchr(err, '\n'))
		fail_msg("expected one line naming %s with '%s', got '%s'", file, msg, err);
}

static void test_cglabels__names_file_errors(void **state)
{
	char *root = tree_new("cgnames"), big[PATH_MAX];
	struct cgnames *n = NULL;
	char err[512] = "";
	FILE *f;
	int i;

	(void)state;
	expect_bad_file(root, NULL, -ENOENT, "No such file or directory");
	expect_bad_file(root, "", -EINVAL, "is empty");
	expect_bad_file(root, "{\"" ID1 "\": \"web\"", -EINVAL, "ends in the middle of a value");
	expect_bad_file(root, "{\"" ID1 "\": \"web\"} x", -EINVAL, "is not JSON");
	expect_bad_file(root, "[\"web\"]", -EINVAL, "is not a JSON object");
	expect_bad_file(root, "{\"4b1f0a7c2e9d\": \"web\"}", -EINVAL,
			"key \"4b1f0a7c2e9d\" is not a container id");
	/* A control byte in a key is shown as '?': the message stays one line. */
	expect_bad_file(root, "{\"4b\\n1f\": \"web\"}", -EINVAL,
			"key \"4b?1f\" is not a container id");
	expect_bad_file(root, "{\"" ID1 "\": 7}", -EINVAL, "is not a string of 1 to 255 bytes");
	expect_bad_file(root, "{\"" ID1 "\": \"\"}", -EINVAL, "is not a string");
	expect_bad_file(root, "{\"" ID1 "\": null}", -EINVAL, "is not a string");
	/* Every error says what to give instead. */
	expect_bad_file(root, "3", -EINVAL, "give a readable file holding a JSON object");
	/* A directory, and more names than the bound. */
	assert_int_equal(cgnames__load(&n, root, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is not a regular file"));
	snprintf(big, sizeof(big), "%s/big.json", root);
	f = fopen(big, "w");
	assert_non_null(f);
	fputc('{', f);
	for (i = 0; i <= CGNAMES_MAX; i++)
		fprintf(f, "%s\"%064x\": \"c\"", i ? "," : "", i);
	fputs("}\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cgnames__load(&n, big, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "names more than 65536 containers"));
	/* No names at all is a valid file. */
	tree_put(root, "empty.json", "{}");
	snprintf(big, sizeof(big), "%s/empty.json", root);
	assert_int_equal(cgnames__load(&n, big, err, sizeof(err)), 0);
	assert_int_equal(cgnames__count(n), 0);
	cgnames__free(n);
	tree_free(root);
}

/* Reloaded when it changes; a bad version is reported once and the names so far stay. */
static void test_cglabels__names_reload(void **state)
{
	char *root = tree_new("cgnames"), file[PATH_MAX], tmp[PATH_MAX], err[512] = "";
	struct cgnames *n = NULL;

	(void)state;
	snprintf(file, sizeof(file), "%s/names.json", root);
	snprintf(tmp, sizeof(tmp), "%s/names.tmp", root);
	tree_put(root, "names.json", "{\"" ID1 "\": \"web\"}");
	assert_int_equal(cgnames__load(&n, file, err, sizeof(err)), 0);
	assert_string_equal(cgnames__find(n, ID1), "web");
	assert_null(cgnames__find(n, ID2));
	assert_null(cgnames__find(n, "web"));
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), 0);

	/* Replaced the safe way (a new file renamed over it). */
	tree_put(root, "names.tmp", "{\"" ID1 "\": \"web-2\", \"" ID2 "\": \"db\"}");
	assert_int_equal(rename(tmp, file), 0);
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), 1);
	assert_string_equal(cgnames__find(n, ID1), "web-2");
	assert_string_equal(cgnames__find(n, ID2), "db");
	assert_int_equal(cgnames__count(n), 2);

	tree_put(root, "names.tmp", "{\"" ID1 "\": ");
	assert_int_equal(rename(tmp, file), 0);
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ends in the middle of a value"));
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), 0);
	assert_string_equal(cgnames__find(n, ID1), "web-2");

	assert_int_equal(unlink(file), 0);
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), -ENOENT);
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), 0);
	assert_int_equal(cgnames__count(n), 2);

	tree_put(root, "names.json", "{}");
	assert_int_equal(cgnames__refresh(n, err, sizeof(err)), 1);
	assert_int_equal(cgnames__count(n), 0);
	assert_null(cgnames__find(n, ID1));
	cgnames__free(n);
	tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cglabels__systemd_service),
		cmocka_unit_test(test_cglabels__user_slices),
		cmocka_unit_test(test_cglabels__init_scope),
		cmocka_unit_test(test_cglabels__delegated_subgroup),
		cmocka_unit_test(test_cglabels__no_match),
		cmocka_unit_test(test_cglabels__docker),
		cmocka_unit_test(test_cglabels__podman),
		cmocka_unit_test(test_cglabels__cri_systemd),
		cmocka_unit_test(test_cglabels__kubepods_cgroupfs),
		cmocka_unit_test(test_cglabels__v1_paths),
		cmocka_unit_test(test_cglabels__odd_shapes),
		cmocka_unit_test(test_cglabels__parse_list),
		cmocka_unit_test(test_cglabels__for_path),
		cmocka_unit_test(test_cglabels__names_file_errors),
		cmocka_unit_test(test_cglabels__names_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

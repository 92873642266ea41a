// SPDX-License-Identifier: MIT
/*
 * A BPF program's or map's contents as an array of fixed-size records: a
 * task iterator's output, a hash map's entries. libbpf alone; the
 * collector's files read their maps with these.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collect/bpfdump.h"

/*
 * Run a task iterator and collect its fixed-size records into a malloc'd
 * array. seq_file hands out whole records; reassemble across reads anyway.
 */
int bpfdump__iter(struct bpf_program *prog, size_t rec_size, void **out, size_t *nr)
{
	char *v = NULL, *grown;
	size_t cap = 0, n = 0, have = 0;
	struct bpf_link *link;
	int fd, err = 0;
	ssize_t r;

	*out = NULL;
	*nr = 0;
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * rec_size);
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			v = grown;
		}
		r = read(fd, v + n * rec_size + have, rec_size - have);
		if (r <= 0) {
			if (r < 0)
				err = -errno;
			else if (have)
				err = -EIO;
			break;
		}
		have += (size_t)r;
		if (have == rec_size) {
			have = 0;
			n++;
		}
	}
	close(fd);
cleanup:
	bpf_link__destroy(link);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

/*
 * Every entry of a hash map (keys of at most 128 bytes) as records of rec_size bytes: the key at offset
 * 0, the value at val_off. An entry deleted while we walk is skipped.
 */
int bpfdump__map(int fd, size_t key_size, size_t val_off, size_t rec_size, void **out, size_t *nr)
{
	char key[128], next[128], *v = NULL, *grown;
	size_t cap = 0, n = 0;
	void *prev = NULL;

	if (key_size > sizeof(key))
		return -E2BIG;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * rec_size);
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		if (bpf_map_lookup_elem(fd, key, v + n * rec_size + val_off))
			continue;
		memcpy(v + n * rec_size, key, key_size);
		n++;
	}
	*out = v;
	*nr = n;
	return 0;
}

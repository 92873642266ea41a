/* SPDX-License-Identifier: MIT */
/*
 * Container names from a JSON file, {"<64-hex container id>": "name", ...},
 * written by whatever knows them (a runtime's event hook, a deployment
 * tool), so khbpf needs no container runtime socket. Reread when it changes.
 */
#ifndef KHBPF_CGNAMES_H
#define KHBPF_CGNAMES_H

#include <stddef.h>

#define CGNAMES_ID_LEN 64 /* a container id: 64 lowercase hex digits */
#define CGNAMES_NAME_MAX 256 /* a name, with the NUL */
#define CGNAMES_MAX 65536 /* names in one file */

struct cgnames;

/*
 * Reads path. 0, or -errno (cannot be read), -EINVAL (not such an object),
 * -EFBIG, -E2BIG with one line in errbuf: the path, what is wrong, what to
 * write instead.
 */
int cgnames__load(struct cgnames **out, const char *path, char *errbuf, size_t errlen);
/*
 * Rereads the file when it changed (another inode, size or mtime): 1 when
 * it was reloaded, 0 when unchanged, -errno with one line in errbuf when it
 * could not be (the names so far stay). A file that failed is not read
 * again until it changes.
 */
int cgnames__refresh(struct cgnames *c, char *errbuf, size_t errlen);
/* The name of the container id, or NULL; valid until the next refresh. */
const char *cgnames__find(const struct cgnames *c, const char *id);
size_t cgnames__count(const struct cgnames *c);
void cgnames__free(struct cgnames *c);

#endif /* KHBPF_CGNAMES_H */

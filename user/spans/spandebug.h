/* SPDX-License-Identifier: MIT */
/*
 * The separate debug file of a stripped object, where Debian's -dbgsym
 * packages put them: found by the object's build-id (its NT_GNU_BUILD_ID
 * note) or its .gnu_debuglink, checked against it, and its .symtab added to
 * the object's functions. A debug file keeps the object's section addresses
 * with the contents left out (NOBITS), so its symbols are the object's
 * link-time addresses and the object's program headers turn them into file
 * offsets. Internal to spanfind.
 */
#ifndef KHBPF_SPANDEBUG_H
#define KHBPF_SPANDEBUG_H

#include <stddef.h>
#include <sys/types.h>

#include "spans/spanelf.h"

/* Where the system keeps debug files, in the target's root. */
#define SPANDEBUG_SYSTEM_DIR "/usr/lib/debug"

/*
 * Looks for the debug file of f, the object pid sees as object (opened
 * through root/proc/PID/root; pid 0: a host path under root), and adds its
 * functions to f's (elf_file__add_debug). With NN/REST the build-id in hex
 * (its first byte, then the rest) and LINK the .gnu_debuglink's file name,
 * the candidates are, in order: for each of dirs (host paths, as given),
 * DIR/.build-id/NN/REST.debug and DIR/OBJDIR/LINK; then, in the target's
 * root, /usr/lib/debug/.build-id/NN/REST.debug, OBJDIR/LINK,
 * OBJDIR/.debug/LINK and /usr/lib/debug/OBJDIR/LINK (GDB's order), where
 * OBJDIR is the directory of object. A build-id candidate must carry the
 * same build-id, a debuglink one the CRC32 the debuglink names, and either
 * a .symtab with functions; the object itself is no candidate. Returns 0
 * when one was added: f->debug_path names it as the target sees it (or
 * DIR/...). -ENOENT when none was usable, with why (size bytes) ending a
 * sentence about the object: the first candidate refused and why, or that
 * none was there. -ENOMEM.
 */
int spandebug__load(struct elf_file *f, const char *root, pid_t pid, const char *object,
		    const char *const *dirs, size_t nr_dirs, char *why, size_t size);

#endif /* KHBPF_SPANDEBUG_H */

# SPDX-License-Identifier: GPL-2.0
#
# edgeq top-level Makefile: userspace library and command, BPF objects and
# skeletons, the kernel module (through kbuild), tests and install.
#
#   make                 libedgeq (static + shared), edgeq, BPF skeletons
#   make modules         kmod/edgeq.ko against KDIR
#   make check           every test suite; ends with "N passed, N failed, N skipped"
#   make kfuzz           the kernel fuzzer in the test VM for KFUZZ_SECS (600)
#   make sanitize        the unit tests under ASan+UBSan
#   make run             build, make the default model, run it
#   make install DESTDIR= PREFIX=
#   make format-check    clang-format (kernel style) over all C sources
#   make cross           aarch64 build into build-aarch64/ (CROSS=aarch64-linux-gnu-)
#   make FLOOR=1         as if only the floor library versions (README.md) were
#                        present: every tools/floor/probe fallback, in build-floor/
#
# Sources are found by wildcard: a new .c under userspace/lib/<part>/ joins
# libedgeq, a new userspace/cli/*.c joins the command, a new tests/unit/test_*.c
# becomes a cmocka test binary, a new bpf/*.bpf.c gets an object and skeleton.

VERSION := 0.1.0
ABI_MAJOR := 0

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc

CROSS ?=
CC := $(CROSS)gcc
AR := $(CROSS)ar
PKG_CONFIG ?= pkg-config
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || ls /usr/lib/linux-tools/*/bpftool 2>/dev/null | tail -1 || echo bpftool)

# FLOOR=1: build as if only the floor versions of the libraries (README.md)
# were present: every probe of tools/floor/probe takes its fallback. Such a
# build goes to build-floor/ unless O says otherwise.
FLOOR ?=
O ?= $(if $(filter 1,$(FLOOR)),build-floor,build)
ARCH := $(shell $(CC) -dumpmachine | cut -d- -f1)

GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

WERROR ?= $(if $(CI),-Werror,)
OPT ?= -O2 -g
CPPFLAGS += -Iinclude -Iinclude/uapi -Iuserspace/lib -I$(O) -I. -D_GNU_SOURCE \
	-DEDGEQ_VERSION='"$(VERSION)"' -DEDGEQ_COMMIT='"$(GIT_COMMIT)"'
CFLAGS ?= $(OPT)
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes -fno-strict-aliasing \
	-fPIC -pthread $(WERROR)
LDFLAGS += -pthread

# Libraries libedgeq uses. pkg-config where the package ships a .pc file.
PKGS := liburing libbpf hwloc jansson libmicrohttpd libcurl libsodium inih libsystemd
LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lnuma -lm
CPPFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)

# Per-ISA kernels: files under an x86/ or arm64/ directory are built only for
# that ISA, with the flags they need. The ops table picks among them at run time.
ISA_FLAGS_x86 := -mavx2 -mfma -mf16c
ISA_FLAGS_arm64 := -march=armv8.2-a+dotprod+fp16
# Bit-identical results across ISAs: the compiler must never fuse a*b+c on its
# own (aarch64 GCC does by default); kernels write fmaf() where they mean it.
CFLAGS += -ffp-contract=off

LIB_SRCS_ALL := $(sort $(wildcard userspace/lib/*.c userspace/lib/*/*.c userspace/lib/*/*/*.c))
# (make patterns take a single %, so the ISA directories are listed explicitly)
LIB_SRCS_X86 := $(wildcard userspace/lib/*/x86/*.c userspace/lib/*/*/x86/*.c)
LIB_SRCS_ARM64 := $(wildcard userspace/lib/*/arm64/*.c userspace/lib/*/*/arm64/*.c)
ifeq ($(ARCH),x86_64)
LIB_SRCS := $(filter-out $(LIB_SRCS_ARM64),$(LIB_SRCS_ALL))
else ifeq ($(ARCH),aarch64)
LIB_SRCS := $(filter-out $(LIB_SRCS_X86),$(LIB_SRCS_ALL))
else
LIB_SRCS := $(filter-out $(LIB_SRCS_X86) $(LIB_SRCS_ARM64),$(LIB_SRCS_ALL))
endif
CLI_SRCS := $(sort $(wildcard userspace/cli/*.c))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
TEST_HELPER_SRCS := $(sort $(wildcard tests/lib/*.c))
TOOL_SRCS := $(sort $(wildcard tools/*/*.c))
BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))

# The Vulkan backend (userspace/lib/gpu/vulkan/) needs libvulkan and glslc:
# without either it is left out, and said so; the CPU backend remains.
GLSLC ?= glslc
ifeq ($(CROSS),)
WITH_VULKAN ?= $(shell $(PKG_CONFIG) --exists vulkan 2>/dev/null && command -v $(GLSLC) >/dev/null && echo 1)
endif
VK_SRCS := $(wildcard userspace/lib/gpu/vulkan/*.c)
SHADER_SRCS := $(sort $(wildcard userspace/lib/gpu/shaders/*.comp))
SHADER_INCS := $(SHADER_SRCS:userspace/lib/gpu/shaders/%.comp=$(O)/gpu/shaders/%.inc)
ifeq ($(WITH_VULKAN),1)
CPPFLAGS += -DEDGEQ_HAVE_VULKAN=1
LIBS += $(shell $(PKG_CONFIG) --libs vulkan)
else
LIB_SRCS := $(filter-out $(VK_SRCS),$(LIB_SRCS))
$(info edgeq: building without the Vulkan backend (needs libvulkan-dev and glslc, or WITH_VULKAN=0 was given))
endif

# The CUDA backend (userspace/lib/gpu/cuda/): nvcc builds its kernels into
# a fatbin embedded in the library; the driver is loaded at run time
# (dlopen), so nothing links against CUDA and a machine without a driver
# just lists no CUDA device. Left out where no nvcc is found.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_INC ?= $(if $(NVCC),$(dir $(NVCC))../include)
ifeq ($(CROSS),)
WITH_CUDA ?= $(shell test -n "$(NVCC)" && test -r "$(CUDA_INC)/cuda.h" && echo 1)
endif
# sm_87 code for Orin, compute_75 PTX for anything newer (Turing on)
NVCC_ARCH ?= -gencode arch=compute_75,code=compute_75 -gencode arch=compute_87,code=sm_87
CUDA_SRCS := $(wildcard userspace/lib/gpu/cuda/*.c)
ifeq ($(WITH_CUDA),1)
CPPFLAGS += -DEDGEQ_HAVE_CUDA=1
LIBS += -ldl
else
LIB_SRCS := $(filter-out $(CUDA_SRCS),$(LIB_SRCS))
endif

LIB_OBJS := $(LIB_SRCS:%.c=$(O)/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%)
TEST_HELPER_OBJS := $(TEST_HELPER_SRCS:%.c=$(O)/%.o)
TOOL_BINS := $(sort $(foreach s,$(TOOL_SRCS),$(O)/$(patsubst %/,%,$(dir $(s)))))
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(O)/bpf/%.bpf.o)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(O)/bpf/%.skel.h)

STATIC_LIB := $(O)/libedgeq.a
SHARED_LIB := $(O)/libedgeq.so.$(VERSION)
SONAME := libedgeq.so.$(ABI_MAJOR)
EDGEQ := $(O)/edgeq

# BPF is built only for the native ISA with a usable clang and bpftool.
ifeq ($(CROSS),)
WITH_BPF ?= $(shell command -v $(CLANG) >/dev/null && test -x "$(BPFTOOL)" -o -n "$$(command -v $(BPFTOOL))" && echo 1)
endif
ifeq ($(WITH_BPF),1)
CPPFLAGS += -DEDGEQ_HAVE_BPF=1
BPF_DEPS := $(BPF_SKELS)
endif

.PHONY: all lib modules check check-unit fuzz kfuzz sanitize run install format format-check \
	clean cross tools tests FORCE
.DEFAULT_GOAL := all

all: $(BPF_DEPS) $(STATIC_LIB) $(SHARED_LIB) $(EDGEQ) tools

lib: $(STATIC_LIB) $(SHARED_LIB)

# ---- probes for APIs newer than the floor -> $(O)/edgeq_config.h
CONFIG_H := $(O)/edgeq_config.h
$(CONFIG_H): tools/floor/probe FORCE
	@FLOOR=$(FLOOR) WITH_BPF=$(WITH_BPF) tools/floor/probe $@ $(CC) $(CPPFLAGS)
FORCE:

$(O)/%.o: %.c | $(CONFIG_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(if $(findstring /x86/,$<),$(ISA_FLAGS_x86))$(if $(findstring /arm64/,$<),$(ISA_FLAGS_arm64)) -MMD -MP -c -o $@ $<

# Everything in the library may include a BPF skeleton; bpf.c does.
$(LIB_OBJS) $(CLI_OBJS): | $(BPF_DEPS)
$(O)/userspace/lib/pressure/bpf.o: $(BPF_DEPS)

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS) userspace/lib/libedgeq.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=userspace/lib/libedgeq.map \
		$(LDFLAGS) -o $@ $(LIB_OBJS) $(LIBS)
	ln -sf libedgeq.so.$(VERSION) $(O)/$(SONAME)
	ln -sf $(SONAME) $(O)/libedgeq.so

# The command links the static library so it runs from the build tree as is.
$(EDGEQ): $(CLI_OBJS) $(STATIC_LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(STATIC_LIB) $(LIBS)

# tools/<name>/*.c -> build/tools/<name>
tools: $(TOOL_BINS)
# (objects under $(O)/tools-obj/: $(O)/tools/<name> is the program itself)
$(O)/tools-obj/%.o: tools/%.c | $(CONFIG_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<
define tool_rule
$(1): $(patsubst tools/%.c,$(O)/tools-obj/%.o,$(wildcard tools/$(notdir $(1))/*.c)) $(STATIC_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LIBS)
endef
$(foreach t,$(TOOL_BINS),$(eval $(call tool_rule,$(t))))

# ---- BPF: vmlinux.h from the running kernel's BTF, else the hand-kept subset
# (the target's: BPF objects are CO-RE, the same for a cross build but for
# __TARGET_ARCH, which only the kprobe/pt_regs helpers use)
BPF_ARCH := $(shell echo $(ARCH) | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
$(O)/bpf/vmlinux.h:
	@mkdir -p $(dir $@)
	if [ -r /sys/kernel/btf/vmlinux ]; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@; \
	else cp bpf/vmlinux_min.h $@; fi

$(O)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(O)/bpf/vmlinux.h
	@mkdir -p $(dir $@)
	$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) -I$(O)/bpf -Ibpf -Iinclude \
		-Wall -Werror -c $< -o $@
	llvm-strip -g $@ 2>/dev/null || true

$(O)/bpf/%.skel.h: $(O)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---- Vulkan compute shaders: GLSL -> SPIR-V words (glslc -mfmt=c), embedded
$(O)/gpu/shaders/%.inc: userspace/lib/gpu/shaders/%.comp $(wildcard userspace/lib/gpu/shaders/*.glsl)
	@mkdir -p $(dir $@)
	$(GLSLC) --target-env=vulkan1.2 -O -mfmt=c -o $@ $<

$(O)/gpu/shaders.h: $(SHADER_INCS)
	@mkdir -p $(dir $@)
	for f in $(SHADER_INCS); do n=$$(basename $$f .inc); \
		printf 'static const uint32_t spv_%s[] =\n#include "gpu/shaders/%s.inc"\n;\n' $$n $$n; \
	done > $@.tmp && mv $@.tmp $@

$(VK_SRCS:%.c=$(O)/%.o): $(O)/gpu/shaders.h

# ---- CUDA kernels: a fatbin (-fmad=false: no contraction the CPU does not
# do), embedded as bytes
$(O)/gpu/cuda_fatbin.h: userspace/lib/gpu/cuda/kernels.cu
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -fmad=false $(NVCC_ARCH) -o $(O)/gpu/cuda.fatbin $<
	{ echo 'static const unsigned char edgeq_cuda_fatbin[] __attribute__((aligned(8))) = {'; \
	  od -An -v -tx1 $(O)/gpu/cuda.fatbin | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; } > $@.tmp && mv $@.tmp $@

$(CUDA_SRCS:%.c=$(O)/%.o): $(O)/gpu/cuda_fatbin.h
$(CUDA_SRCS:%.c=$(O)/%.o): CPPFLAGS += -isystem $(CUDA_INC)

# ---- kernel module through kbuild
KDIR ?= $(shell d=/lib/modules/$$(uname -r)/build; if [ -d $$d ]; then echo $$d; \
	else ls -d /usr/src/linux-headers-*-amd64 /usr/src/linux-headers-*-arm64 \
	/usr/src/linux-headers-*-generic 2>/dev/null | sort -V | tail -1; fi)
modules:
	@test -n "$(KDIR)" || { echo "make modules: no kernel headers; set KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

modules_clean:
	@test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(CURDIR) clean

# ---- tests
$(O)/tests/unit/%: tests/unit/%.c $(TEST_HELPER_OBJS) $(STATIC_LIB) | $(CONFIG_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/lib $(CFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(STATIC_LIB) \
		-lcmocka $(LIBS) $(LDFLAGS)

tests: all $(UNIT_BINS)

# Kernel tests: programs run inside the test VM by tests/kmod/t_kmod.
KMOD_TEST_BINS := $(patsubst tests/kmod/%.c,$(O)/tests/kmod/%,$(wildcard tests/kmod/*.c))
$(O)/tests/kmod/%: tests/kmod/%.c $(STATIC_LIB) | $(CONFIG_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(STATIC_LIB) $(LIBS) $(LDFLAGS)
tests: $(KMOD_TEST_BINS)

# Installs what is missing (root), builds everything, runs every suite.
check:
	tools/install-deps
	$(MAKE) tests
	O=$(O) tests/run $(SUITES)

# The userspace fuzzers for longer (FUZZ_SECS each, default 300; make check
# gives them 5 s each).
FUZZ_SECS ?= 300
fuzz: tests
	EDGEQ_FUZZ_SECONDS=$(FUZZ_SECS) EDGEQ_TOP=$(CURDIR) O=$(O) tests/fuzz/t_fuzz.sh

# The kernel fuzzer for longer (KFUZZ_SECS, default 600) in the 6.1 VM.
KFUZZ_SECS ?= 600
kfuzz: tests
	@kd=$$(ls -d /usr/src/linux-headers-6.1*-amd64 | sort -V | tail -1); \
	$(MAKE) -s modules KDIR=$$kd
	EDGEQ_KMOD_CASES=kfuzz EDGEQ_KFUZZ_SECS=$(KFUZZ_SECS) \
		tools/vm/run-in-vm --timeout $$(($(KFUZZ_SECS) + 300)) \
		--params "queues=npu0,gpu0 sim_sensor=1" -- tests/kmod/guest-suite

check-unit: tests
	O=$(O) tests/run unit

sanitize:
	$(MAKE) O=build-san OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		LDFLAGS="-fsanitize=address,undefined" WITH_BPF=$(WITH_BPF) WERROR= tests
	O=build-san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/run unit

# Default: the library, command, tools and unit test binaries (tests/cross),
# with the BPF programs when this host can build them (the aarch64 VM
# attaches them: tests/cross/t_vm_arm64.sh).
CROSS_TARGETS ?= tests
CROSS_WITH_BPF ?= $(WITH_BPF)
cross:
	$(MAKE) O=build-aarch64 CROSS=aarch64-linux-gnu- \
		PKG_CONFIG="env PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config" \
		WITH_BPF=$(CROSS_WITH_BPF) $(CROSS_TARGETS)

# ---- the main job on the built-in default model
RUN_MODEL ?= $(O)/models/default-q4_0.gguf
RUN_PROMPT ?= Once upon a time
run:
	tools/install-deps
	$(MAKE) all
	@test -f $(RUN_MODEL) || tools/make-default-model $(RUN_MODEL)
	@echo "make run: $(RUN_MODEL) is a synthetic model with random weights:" \
		"its speed is real, its text is meaningless."
	@echo "make run: for real text pull a GGUF and run it, e.g." \
		"edgeq pull hf:OWNER/REPO/FILE.gguf; edgeq run -m FILE.gguf -p 'Hello'"
	$(EDGEQ) run -m $(RUN_MODEL) -p "$(RUN_PROMPT)" -n 64

# ---- install
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/edgeq \
		$(DESTDIR)$(INCDIR)/linux $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(PREFIX)/src/edgeq-$(VERSION)
	install -m 755 $(EDGEQ) $(DESTDIR)$(BINDIR)/edgeq
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libedgeq.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libedgeq.so
	install -m 644 include/edgeq/*.h $(DESTDIR)$(INCDIR)/edgeq/
	install -m 644 include/uapi/linux/*.h $(DESTDIR)$(INCDIR)/linux/ 2>/dev/null || true
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' userspace/lib/edgeq.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/edgeq.pc
	install -m 644 Documentation/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	for u in tools/systemd/*.service; do [ -f $$u ] && \
		sed 's|@BINDIR@|$(BINDIR)|' $$u > $(DESTDIR)$(UNITDIR)/$$(basename $$u); done; true
	cp -r Kbuild $(wildcard kmod) include $(DESTDIR)$(PREFIX)/src/edgeq-$(VERSION)/
	sed 's|@VERSION@|$(VERSION)|' tools/dkms.conf.in > $(DESTDIR)$(PREFIX)/src/edgeq-$(VERSION)/dkms.conf

# Placement's device profiles (share/edgeq/devices.ini).
install: install-devices
install-devices:
	install -d $(DESTDIR)$(PREFIX)/share/edgeq
	install -m 644 share/edgeq/devices.ini $(DESTDIR)$(PREFIX)/share/edgeq/

# ---- style
# kmod/ and include/uapi are checked with checkpatch instead (kernel macros).
C_FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v -e '^tests/fuzz/corpus' -e '^kmod/' -e '^include/uapi/' -e '^bpf/vmlinux')
format:
	clang-format -i $(C_FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(C_FORMAT_FILES) && echo "format-check: clean"

# ---- ledgers: device profiles for edgeq plan (found via EDGEQ_DATADIR)
CPPFLAGS += -DEDGEQ_DATADIR='"$(PREFIX)/share/edgeq"'
.PHONY: install-profiles install-udev
# The udev rule giving queue nodes to group edgeq (userspace-api/edgeq.rst).
UDEVDIR ?= $(PREFIX)/lib/udev/rules.d
install: install-udev
install-udev:
	install -d $(DESTDIR)$(UDEVDIR)
	install -m 644 tools/udev/60-edgeq.rules $(DESTDIR)$(UDEVDIR)/

install: install-profiles
install-profiles:
	install -d $(DESTDIR)$(PREFIX)/share/edgeq
	install -m 644 share/edgeq/profiles.ini $(DESTDIR)$(PREFIX)/share/edgeq/

clean: modules_clean
	rm -rf $(O) build-san build-aarch64 build-floor

-include $(shell find $(O) \( -name debian-kernels -o -path '$(O)/floor-*' \) -prune -o -name '*.d' -type f -print 2>/dev/null)

# ---- daemon: the example configuration (an existing one is kept)
.PHONY: install-serve-config
install: install-serve-config
install-serve-config:
	install -d $(DESTDIR)$(SYSCONFDIR)/edgeq
	test -e $(DESTDIR)$(SYSCONFDIR)/edgeq/edgeq.conf || \
		install -m 644 tools/systemd/edgeq.conf $(DESTDIR)$(SYSCONFDIR)/edgeq/edgeq.conf

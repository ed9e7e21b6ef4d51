# Convenience wrapper around CMake (scripts/build.sh) for the usual verbs.
#   make                      build build/trove (optimised)
#   make install [PREFIX=DIR] binary, man page, docs and completions (default /usr/local)
#   make test                 the whole test suite, as CI runs it
#   make fuzz [SECONDS=60]    every fuzz target under libFuzzer (clang)
PREFIX ?= /usr/local
SECONDS ?= 60

.PHONY: all install uninstall test fuzz clean
all:
	bash scripts/build.sh build

install: all
	cmake --install build --prefix "$(PREFIX)"

uninstall:
	xargs rm -f < build/install_manifest.txt

test:
	bash scripts/test.sh

fuzz:
	bash scripts/fuzz.sh $(SECONDS)

clean:
	rm -rf build build-asan build-fuzz

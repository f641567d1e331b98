# passlab — the two commands a fresh Debian/Ubuntu machine needs:
#   make run    install what is missing, build, open the workbench on a sample
#   make test   install what is missing, build, run every test
#
# Packages come from apt (as root, or through sudo). Nothing is downloaded
# at build or run time.

BUILDDIR ?= build
SAMPLE   ?= data/graphs/transformer_block.graph
MESON_OPTS ?=

# Build and test dependencies, by Debian package name (python3-onnx and
# python3-torch: the tests that compare with ONNX's expected outputs and
# run models exported from PyTorch; without them those tests skip). g++: the
# CUDA emulator compiles the generated CUDA C as C++ (the emulated CUDA tests).
DEPS = meson ninja-build pkg-config gcc g++ libc6-dev python3 \
       libglib2.0-dev protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata \
       liblua5.4-dev libgtk-4-dev libgtksourceview-5-dev libgraphviz-dev graphviz libopenblas-dev \
       xvfb xauth dbus-daemon librsvg2-common adwaita-icon-theme appstream \
       python3-numpy python3-onnx python3-torch

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build run test clean

all: build

deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	@if [ ! -f $(BUILDDIR)/build.ninja ]; then meson setup $(BUILDDIR) $(MESON_OPTS); fi
	ninja -C $(BUILDDIR)

run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILDDIR)/app/passlab $(SAMPLE); \
	else \
	  echo "No display: showing the sample with passlab-cli instead of the workbench."; \
	  $(BUILDDIR)/app/passlab-cli info $(SAMPLE) && \
	  $(BUILDDIR)/app/passlab-cli run $(SAMPLE) --passes simplify,decompose,reshape-sink,fuse-library,fuse-loops --check; \
	fi

test: build
	@meson test -C $(BUILDDIR) --print-errorlogs --num-processes 2 > $(BUILDDIR)/test-output.txt 2>&1; \
	status=$$?; tail -n 40 $(BUILDDIR)/test-output.txt; \
	python3 tests/summarize.py $(BUILDDIR)/meson-logs/testlog.json || status=1; \
	exit $$status

clean:
	rm -rf $(BUILDDIR)

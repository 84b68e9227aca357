#!/usr/bin/env bash
# Headless Chromium for the report's browser test (loadtest/report/tests/first_screen.rs renders a
# report and checks its first screen at 1280 x 800), and for the README's screenshot.
# Usage: scripts/chromium.sh install
#   install  installs the pinned Debian package if no chromium is on the PATH (one already there is
#            kept, whatever its version; CHROMIUM names another binary), as infra/local/monitor.sh
#            installs its tools
set -euo pipefail

# Debian 12 (bookworm-security), pinned to the upstream release and Debian revision; the suffix is
# left open (`*`) as in infra/local/monitor.sh. bookworm-security keeps only its newest build: when
# a security update replaces this one, `install` says so and installs the build apt offers (the
# test checks a page's layout, which a security build does not change); move the pin then.
CHROMIUM_DEB="chromium=156.0.8078.129-1~deb12u1*"

say() { printf 'chromium: %s\n' "$*"; }
die() {
	printf 'chromium: error: %s\n' "$*" >&2
	exit 1
}

chromium_path() { command -v "${CHROMIUM:-chromium}" || true; }

cmd_install() {
	if [[ -z "$(chromium_path)" ]]; then
		command -v apt-get >/dev/null || die "no chromium and no apt-get: install Chromium and set CHROMIUM to it"
		local sudo=''
		[[ "$(id -u)" == 0 ]] || sudo=sudo
		say "apt-get install $CHROMIUM_DEB"
		$sudo apt-get update -qq
		local package="$CHROMIUM_DEB"
		if ! apt-cache madison chromium | awk '{ print $3 }' | grep -qF "$(v="${CHROMIUM_DEB#chromium=}"; echo "${v%\*}")"; then
			package=chromium
			say "WARNING: the pinned $CHROMIUM_DEB is no longer offered (a security update replaced it); installing $(apt-cache policy chromium | awk '/Candidate/ { print $2 }'): move the pin in scripts/chromium.sh"
		fi
		DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
			--no-install-recommends "$package" >/dev/null
	fi
	local chromium
	chromium=$(chromium_path)
	[[ -n "$chromium" ]] || die "${CHROMIUM:-chromium} is still not on the PATH"
	say "$("$chromium" --version 2>/dev/null)"
}

case "${1:-}" in
install) cmd_install ;;
*) die "usage: scripts/chromium.sh install" ;;
esac

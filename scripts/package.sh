#!/usr/bin/env bash
# `npm run package`: builds petrel_<version>_<arch>.deb from this checkout with dpkg-deb (no
# network at install time: the package holds everything but Node.js). PETREL_VERSION overrides
# the version (package.json's by default), which the native --version strings carry too;
# PETREL_PACKAGE_OUT is where the .deb goes (default: build/package/).
#
# Layout (FHS), a package root that keeps the tree's relative paths, so petreld's runtime
# lookups (native files found by walking up to package.json, migrations beside the sources,
# the worker and dynamic imports relative to their modules) work unchanged:
#   /usr/lib/petrel/package.json, dist/src/ (tsc's output and the client bundles, no maps),
#     src/fleet/migrations/*.sql, native/build/ (tenders, holder, spawner, jail, kvm-probe,
#     the two addons, the canary images), node_modules/ (production dependencies only)
#   /usr/bin/petrel  -> ../lib/petrel/dist/src/cli/petrel.cjs   (the client)
#   /usr/sbin/petreld -> ../lib/petrel/dist/src/cli/petreld.js  (the daemon)
#   /lib/systemd/system/petreld.service, petrel-tls.service
#   /etc/petrel/petreld.toml (a conffile)
#   /usr/share/doc/petrel/copyright, changelog.Debian.gz
# Debug information of the native programs is kept apart, in <out>/petrel_<version>_<arch>.debug/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
version=${PETREL_VERSION:-$(node -p "require('./package.json').version")}
arch=$(dpkg --print-architecture)
out=${PETREL_PACKAGE_OUT:-$repo/build/package}
if ! [[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]]; then
  echo "package: PETREL_VERSION '$version' is not a Debian version" >&2
  exit 2
fi

# Who the package says made it: DEBFULLNAME and DEBEMAIL as Debian's tools take them, else the
# author of the checked-out commit.
if [ -n "${DEBEMAIL:-}" ]; then
  maintainer="${DEBFULLNAME:-Petrel maintainers} <$DEBEMAIL>"
else
  maintainer=$(git log -1 --format='%an <%ae>' 2>/dev/null || true)
fi
[ -n "$maintainer" ] || maintainer="Petrel maintainers <root@$(hostname --fqdn)>"

work=$(mktemp -d "${TMPDIR:-/tmp}/petrel-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
lib=$root/usr/lib/petrel

# --- build --------------------------------------------------------------------------------
[ -d node_modules ] || npm ci --no-audit --no-fund
# tsc's output and the client bundles into the work directory: the tree's dist/, which tests
# may be running from, is left alone.
npx tsc -p tsconfig.build.json --outDir "$work/dist"
PETREL_DIST="$work/dist" node scripts/build-client.mjs
PETREL_DIST="$work/dist" node scripts/build-dashboard.mjs
# The native parts petreld runs, built for this version into a directory of their own (the
# tree's native/build, with the tree's version, stays as it is).
native=$work/native
programs=(petrel-hvt petrel-spt petrel-holder petrel-spawner petrel-jail kvm-probe allocator.node sslctx.node)
images=(canary.hvt canary.spt canary-net.hvt canary-net.spt canary-blk.hvt canary-blk.spt sse.hvt)
targets=()
for f in "${programs[@]}" "${images[@]}"; do targets+=("$native/$f"); done
make -s -C native BUILD="$native" VERSION="$version" "${targets[@]}" >/dev/null

# --- the tree -----------------------------------------------------------------------------
mkdir -p "$lib/dist" "$lib/native/build" "$lib/src/fleet" "$root/usr/bin" "$root/usr/sbin" \
  "$root/lib/systemd/system" "$root/etc/petrel" "$root/usr/share/doc/petrel" "$root/DEBIAN"
(cd "$work/dist" && find src -type f \( -name '*.js' -o -name '*.cjs' \) -print0 | xargs -0 cp --parents -t "$lib/dist")
# The web dashboard's page and styles beside its script (served by src/web/dashboard-files.ts).
cp "$work/dist/src/web/dashboard/index.html" "$work/dist/src/web/dashboard/app.css" "$lib/dist/src/web/dashboard/"
cp -r src/fleet/migrations "$lib/src/fleet/"
# The lock file pins the production tree exactly; npm ci prunes it to what `dependencies` need
# (it wants the package.json the lock was made from), then package.json keeps what runs.
cp package.json package-lock.json "$lib/"
(cd "$lib" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
node -e '
  const p = require(process.argv[1]);
  const kept = { name: p.name, version: process.argv[2], description: p.description, type: p.type,
    license: p.license, engines: p.engines, bin: p.bin, dependencies: p.dependencies };
  require("fs").writeFileSync(process.argv[1], JSON.stringify(kept, null, 2) + "\n");
' "$lib/package.json" "$version"
rm -f "$lib/package-lock.json"
# What the packages' authors left for their own tools (.npmignore, .eslintrc, .github, .bin, …).
find "$lib/node_modules" -mindepth 1 -name '.*' -prune -exec rm -rf {} +

debug=$out/petrel_${version}_${arch}.debug
rm -rf "$debug" && mkdir -p "$debug"
for f in "${programs[@]}"; do
  install -m 0755 "$native/$f" "$lib/native/build/$f"
  # Stripped, the debug information kept apart (linked by --add-gnu-debuglink).
  objcopy --only-keep-debug "$lib/native/build/$f" "$debug/$f.debug"
  strip --strip-unneeded "$lib/native/build/$f"
  objcopy --add-gnu-debuglink="$debug/$f.debug" "$lib/native/build/$f"
done
chmod 0644 "$lib/native/build/"*.node
# The canaries are freestanding static guests, loaded by a tender, never run by the host.
for f in "${images[@]}"; do install -m 0644 "$native/$f" "$lib/native/build/$f"; done

ln -s ../lib/petrel/dist/src/cli/petrel.cjs "$root/usr/bin/petrel"
ln -s ../lib/petrel/dist/src/cli/petreld.js "$root/usr/sbin/petreld"
chmod 0755 "$lib/dist/src/cli/petrel.cjs" "$lib/dist/src/cli/petrel.js" "$lib/dist/src/cli/petreld.js"
install -m 0644 contrib/package/petreld.service contrib/package/petrel-tls.service "$root/lib/systemd/system/"
# The conffile is contrib/petreld.toml with TLS off: there is no CA before `petrel ca init`.
sed -e 's/^\(tls\(Listen\|Ca\|Cert\|Key\) = \)/# \1/' \
  -e '/^\[tls\]$/r contrib/package/tls-off.txt' contrib/petreld.toml >"$root/etc/petrel/petreld.toml"
grep -q '^# tlsListen = ' "$root/etc/petrel/petreld.toml" || { echo "package: TLS not turned off in petreld.toml" >&2; exit 1; }
chmod 0644 "$root/etc/petrel/petreld.toml"
install -m 0644 contrib/package/copyright "$root/usr/share/doc/petrel/copyright"
install -D -m 0644 contrib/package/lintian-overrides "$root/usr/share/lintian/overrides/petrel"
{
  echo "petrel ($version) unstable; urgency=medium"
  echo
  echo "  * Built from $(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree') by npm run package."
  echo
  echo " -- $maintainer  $(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$root/usr/share/doc/petrel/changelog.Debian.gz"
chmod 0644 "$root/usr/share/doc/petrel/changelog.Debian.gz"

# --- control ------------------------------------------------------------------------------
for s in postinst prerm postrm; do install -m 0755 "contrib/package/$s" "$root/DEBIAN/$s"; done
echo /etc/petrel/petreld.toml >"$root/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# The native sslctx addon is built for Node 20's ABI (NODE_MODULE_VERSION 115): hence << 21.
cat >"$root/DEBIAN/control" <<CONTROL
Package: petrel
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: nodejs (>= 20.10~), nodejs (<< 21~), libc6, passwd
Section: admin
Priority: optional
Description: solo5 unikernel daemon, managed over mutual TLS (Albatross-compatible)
 petreld runs solo5 unikernels (hvt on KVM, spt) on this host under systemd
 and lets remote clients manage them over mutual TLS, speaking the Albatross
 wire protocol. Upgrading the package restarts petreld only: every unikernel
 keeps running.
CONTROL

mkdir -p "$out"
deb=$out/petrel_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"

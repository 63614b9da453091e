#!/usr/bin/env bash
# Re-vendor the JavaScript/CSS that asv's published site loads from CDNs, so
# `launchbench site` output works offline (air-gapped GPU hosts, CI, a laptop
# on a train). Sources are the npm registry packages of the versions asv 0.6
# pins in its index.html (stupidtable 1.0.1 is not on npm: 1.1.3 has the same
# $.fn.stupidtable API). Run from anywhere: bash launchbench/output/asv_vendor/update.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
for spec in jquery@3.3.1 flot@0.8.3 flot-orderbars@1.0.0 stupid-table-plugin@1.1.3 \
            blueimp-md5@2.19.0 bootstrap@3.1.1; do
  npm pack --silent "$spec" >/dev/null
done
for tgz in *.tgz; do mkdir -p "${tgz%.tgz}" && tar xzf "$tgz" -C "${tgz%.tgz}"; done
cp jquery-3.3.1/package/dist/jquery.min.js "$here/jquery-3.3.1.min.js"
for f in jquery.flot.js jquery.flot.time.js jquery.flot.selection.js jquery.flot.categories.js; do
  cp "flot-0.8.3/package/$f" "$here/$f"
done
cp flot-orderbars-1.0.0/package/js/jquery.flot.orderBars.js "$here/"
cp stupid-table-plugin-1.1.3/package/stupidtable.min.js "$here/"
cp blueimp-md5-2.19.0/package/js/md5.min.js "$here/"
cp bootstrap-3.1.1/package/dist/js/bootstrap.min.js bootstrap-3.1.1/package/dist/css/bootstrap.min.css "$here/"
{
  echo "Third-party files vendored by update.sh; all MIT-licensed. Licences follow."
  for pair in "jQuery 3.3.1:jquery-3.3.1/package/LICENSE.txt" "Flot 0.8.3:flot-0.8.3/package/LICENSE.txt" \
              "stupidtable 1.1.3:stupid-table-plugin-1.1.3/package/LICENSE" \
              "blueimp-md5 2.19.0:blueimp-md5-2.19.0/package/LICENSE.txt" "Bootstrap 3.1.1:bootstrap-3.1.1/package/LICENSE"; do
    echo; echo "==== ${pair%%:*} ===="; cat "${pair#*:}"
  done
  echo; echo "==== flot-orderbars 1.0.0 ===="
  echo "MIT license; see the header of jquery.flot.orderBars.js."
} > "$here/LICENSES.txt"
echo "vendored into $here"

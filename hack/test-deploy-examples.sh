#!/usr/bin/env bash
# make test-deploy-examples (docs/deploy.md, "The e2e tests against a deployed region"): brings
# up make deploy's region (state in .run/deploy-examples, or DEPLOY_STATE_DIR), runs test/e2e
# against its region.json (OPENHCP_E2E_REGION_FILE; RUN selects the tests, TestEveryExample by
# default), and stops the region again (SIGINT, as Ctrl-C), whatever the tests' outcome. Root:
# the node needs it.
set -euo pipefail

run=${RUN:-'^TestEveryExample$'}
# Minutes to wait for the region (a first run also builds the images).
up_minutes=${DEPLOY_UP_MINUTES:-20}

root=$(cd "$(dirname "$0")/.." && pwd)
# Kept between runs, as make deploy's .run is: the images and binaries built there are reused
# (about 1 GB); the launcher clears its throwaway state itself, and logs stay.
state=${DEPLOY_STATE_DIR:-$root/.run/deploy-examples}
mkdir -p "$state"
# Only a directory of our own: the tests trust its region.json and the kubeconfigs it names
# (client-go runs a kubeconfig's exec plugin), so one another user made first (a shared /tmp
# path) would run their code as us.
if [ ! -O "$state" ]; then
	echo "refusing $state: it is not $(id -un)'s (the tests trust what is in it)" >&2
	exit 1
fi
# PostgreSQL runs as the postgres user and must traverse it (and every directory above it);
# nothing else of its mode changes.
chmod go+x "$state"
region_file=$state/region.json
# A run that was killed leaves its region.json: the wait below must see this run's.
rm -f "$region_file"
log=$state/deploy.out

go build -o "$root/bin/openhcp-deploy" "$root/dev-infrastructure/localregion/cmd/openhcp-deploy"

echo ">> make deploy's region in $state (its output: $log)"
start=$(date +%s)
"$root/bin/openhcp-deploy" -state-dir "$state" -region-file "$region_file" >"$log" 2>&1 &
deploy=$!

stop_region() {
	if kill -0 "$deploy" 2>/dev/null; then
		echo ">> stopping the region (SIGINT to openhcp-deploy, pid $deploy)"
		kill -INT "$deploy"
		wait "$deploy" || true
		echo ">> region stopped; its logs stay in $state/logs"
	fi
}
trap stop_region EXIT
trap 'exit 130' INT TERM

deadline=$((start + up_minutes * 60))
until [[ -s $region_file ]]; do
	if ! kill -0 "$deploy" 2>/dev/null; then
		echo "!! openhcp-deploy exited before the region was up:" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
	if (($(date +%s) > deadline)); then
		echo "!! the region was not up after $up_minutes minutes:" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
	sleep 2
done
echo ">> region up in $(($(date +%s) - start)) s; running test/e2e ($run) against $region_file"

status=0
(cd "$root/test" && OPENHCP_E2E_REGION_FILE=$region_file go test ./e2e -run "$run" -count=1 -v -timeout "${TIMEOUT:-30m}") || status=$?
echo ">> test/e2e ended with status $status after $(($(date +%s) - start)) s in all"
exit "$status"

# The session every shell block of the docs starts from, in a terminal at the repository's root
# while `npm start` runs: it reads the address, organization and key the server's first start
# wrote to bootstrap.json (in DATA_DIR, ./data unless you set it), and defines wait_for.
#   source scripts/examples/session.sh
BOOT="${DATA_DIR:-data}/bootstrap.json"
ORG=$(jq -r .org_id "$BOOT")
BASE=$(jq -r .base_url "$BOOT")
API="$BASE/v1/orgs/$ORG"
AUTH="Authorization: Bearer $(jq -r .api_key "$BOOT")"
source "$(dirname "${BASH_SOURCE[0]}")/wait-for.sh"

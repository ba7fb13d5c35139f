# Sourced by the scripts that install test data from the npm registry:
# Node.js and npm from Debian's packages where the machine lacks npm.
if ! command -v npm >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm
fi

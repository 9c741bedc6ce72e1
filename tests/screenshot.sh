#!/usr/bin/env bash
# Makes README's screenshot of the console, docs/console-timeline.png: runs
# the console's browser test (which leaves a screenshot of each view in
# target/console-screenshots/) and copies the session's timeline. Under
# CI=true, so a missing chromium fails instead of skipping.
#
#   tests/screenshot.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rm -f target/console-screenshots/session.png
CI=true cargo test --workspace --test service -- --exact \
    console::the_console_shows_the_story_and_keeps_policy_changes_to_the_admin
cp target/console-screenshots/session.png docs/console-timeline.png
echo "docs/console-timeline.png made from target/console-screenshots/session.png"

#!/usr/bin/env bash
# Makes README's screenshots of the console (docs/console-overview.png, the
# first screen, and docs/console-timeline.png): runs the console's browser tests (which leaves a screenshot of each view in
# target/console-screenshots/) and copies the session's timeline. Under
# CI=true, so a missing chromium fails instead of skipping.
#
#   tests/screenshot.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rm -f target/console-screenshots/session.png target/console-screenshots/overview.png
CI=true cargo test --workspace --test service -- --exact \
    console::the_console_shows_the_story_and_keeps_policy_changes_to_the_admin \
    console::the_console_shows_what_is_failing_and_retries_it
cp target/console-screenshots/session.png docs/console-timeline.png
cp target/console-screenshots/overview.png docs/console-overview.png
echo "docs/console-timeline.png and docs/console-overview.png made from target/console-screenshots/"

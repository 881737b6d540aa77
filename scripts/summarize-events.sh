#!/usr/bin/env bash
# Reads an agentexec --json event file and prints one view of the run:
#   summarize-events.sh markdown EVENTS.jsonl       the job summary (for $GITHUB_STEP_SUMMARY)
#   summarize-events.sh final-message EVENTS.jsonl  the last agent message ("" if none)
#   summarize-events.sh thread-id EVENTS.jsonl      the thread (session) id ("" if none)
# The GitHub Action, the GitLab component and the examples all call this one script.
# The file is untrusted (a model wrote much of it): lines that are not JSON objects are
# skipped, every field is type-checked, and text that lands in Markdown tables is escaped.
set -euo pipefail

usage() { echo "usage: summarize-events.sh markdown|final-message|thread-id EVENTS.jsonl" >&2; exit 2; }
[ $# -eq 2 ] || usage
view=$1 file=$2
[ -r "$file" ] || { echo "summarize-events: cannot read $file" >&2; exit 2; }

# All valid JSON objects of the file, as one array.
events() { jq -R -s -c '[split("\n")[] | (try fromjson catch null) | select(type == "object")]' "$file"; }

case "$view" in
  final-message)
    events | jq -j '[.[] | select(.type == "item.completed" and (.item | type) == "object"
                              and .item.type == "agent_message" and (.item.text | type) == "string")
                     | .item.text] | last // ""'
    ;;
  thread-id)
    events | jq -j '[.[] | select(.type == "thread.started" and (.thread_id | type) == "string")
                     | .thread_id] | first // ""'
    ;;
  markdown)
    events | jq -r '
      def cell: tostring | gsub("&"; "&amp;") | gsub("<"; "&lt;") | gsub(">"; "&gt;")
                | gsub("\\|"; "&#124;") | gsub("\r?\n"; " ") | .[0:300];
      def items($t): [.[] | select(.type == "item.completed" and (.item | type) == "object"
                                   and .item.type == $t) | .item];
      . as $ev
      | ([$ev[] | select(.type == "turn.completed")] | last) as $done
      | ([$ev[] | select(.type == "turn.failed")] | last) as $failed
      | (items("command_execution")) as $cmds
      | (items("network_request")) as $net
      | ([$net[] | select(.decision == "denied")]) as $refused
      | ([items("file_change")[] | select(.status == "completed")
          | (.changes // [])[] | select(type == "object")] ) as $changes
      | ([items("agent_message")[] | .text | select(type == "string")] | last) as $final
      | ([$ev[] | select(.type == "thread.started") | .thread_id] | first) as $thread
      | "### agentexec: " + (if $failed then "failed" elif $done then "completed"
                             else "no result (the run ended early)" end),
        "",
        (if $thread then "Thread `\($thread | cell)`" else empty end),
        (if $failed then "", "**Error:** " + (($failed.error.message // "unknown") | cell) else empty end),
        "",
        "#### Commands (\($cmds | length))",
        (if ($cmds | length) == 0 then "none" else
           "| exit | command |", "|---:|---|",
           ($cmds[] | "| \(.exit_code // "–" | cell) | <code>\(.command // "" | cell)</code> |")
         end),
        "",
        "#### Files changed (\($changes | map(.path) | unique | length))",
        (if ($changes | length) == 0 then "none" else
           ($changes | group_by(.path)[] | last | "- <code>\(.path // "" | cell)</code> (\(.kind // "?" | cell))")
         end),
        (if ($net | length) == 0 then empty else
           "",
           "#### Network refused (\($refused | length) of \($net | length) connections)",
           (if ($refused | length) == 0 then "none" else
              "| host | port | why |", "|---|---:|---|",
              ($refused[] | "| <code>\(.host // "" | cell)</code> | \(.port // "" | cell) | \(.reason // "" | cell) |")
            end)
         end),
        "",
        "#### Tokens",
        (if ($done.usage | type) == "object" then
           "input \($done.usage.input_tokens // 0) (cached \($done.usage.cached_input_tokens // 0)), output \($done.usage.output_tokens // 0) (reasoning \($done.usage.reasoning_output_tokens // 0))"
         else "not reported" end),
        "",
        "#### Final message",
        "",
        (if $final then $final else "_none_" end)'
    ;;
  *) usage ;;
esac

// SPDX-License-Identifier: MIT
// The agent core, independent of the terminal: takes one input line at a time (a request or a
// slash command), routes requests (search / shell / chat) through the fast tier, runs the tools,
// streams answers through the markdown renderer to an injected output stream, and asks y/N
// questions through an injected confirm callback. The REPL (repl.cpp) only adds line editing,
// history and SIGINT handling around it, so tests drive this class with string streams.
// Invariants: the conversation only holds completed turns (a cancelled answer is kept with a
// "[stopped]" note); nothing runs in the shell or is written to disk without the read-only check
// or confirm(); side questions (/btw) never enter the history. Thread-compatible.
#pragma once
// A request that no longer fits the model's context (a long history) is retried with the older
// half of the history dropped (a few times at most), saying so once; the route each request takes
// (chat, search, shell) is shown before its answer; a failure is reported once.

#include <atomic>
#include <chrono>
#include <ostream>
#include <set>
#include <string>

#include "agent/config.h"
#include "agent/conversation.h"
#include "agent/failover.h"
#include "agent/router.h"
#include "agent/shell_tool.h"

namespace sniper::agent {

struct AgentIo {
  std::ostream* out = nullptr;                // answers, notices, tool output
  ConfirmFn confirm;                          // y/N questions; empty = always no
  const std::atomic<bool>* cancel = nullptr;  // set by Ctrl-C; the caller clears it per line
  bool color = false;                         // ANSI rendering
  std::string cwd = ".";                      // working directory of the shell tool
  std::string grade_log;                      // path of the grade log
};

struct SessionStats {
  int turns = 0;
  int routed[kNumRoutes] = {};
  int fallbacks = 0;
  int cancelled = 0;
  int failed = 0;
  long completion_tokens = 0;
  double last_tok_s = 0;
  std::string last_backend;
};

class Agent {
 public:
  // `pool` must outlive the agent.
  Agent(const AgentConfig& config, BackendPool* pool, AgentIo io);

  // Handles one line. Returns false when the user asked to quit.
  bool handle_line(const std::string& line);

  // The prompt for the current mode ("sniper> " routed, "raw> " plain chat).
  std::string prompt() const;

  // /loop: whether an iteration is due at `now`, and running it (output goes to io.out).
  bool loop_due(std::chrono::steady_clock::time_point now) const;
  void run_loop_iteration();
  bool loop_active() const { return !loop_prompt_.empty(); }

  const Conversation& conversation() const { return conversation_; }
  const std::vector<Attachment>& pending_media() const { return pending_media_; }
  const SessionStats& stats() const { return stats_; }
  // Turns that got no answer because no backend could be reached (for the exit status).
  int unanswered() const { return unanswered_; }
  bool routed_mode() const { return routed_; }
  bool thinking() const { return thinking_; }
  bool auto_tiers() const { return auto_tiers_; }

 private:
  // Turns (agent.cpp).
  void routed_turn(const std::string& text);
  // A chat answer; `media` (the attachments of this message) go to a backend that reads them.
  void chat_turn(const std::string& text, Tier tier, const std::string& route, std::vector<Attachment> media = {});
  void side_question(const std::string& text);
  // Streams a request to the pool and renders it; prints notices and the status line.
  // `trailer` (e.g. the sources list) is printed after a non-empty answer, before the status line.
  // With `quiet_overflow`, a reply refused because the prompt is past the context prints nothing
  // (the caller trims the history and asks again).
  PoolResult stream_answer(Tier tier, const ChatRequest& request, const std::string& trailer = "",
                           bool quiet_overflow = false);
  // A short non-streamed helper request (query rewrite, command writing, summaries).
  PoolResult ask(Tier tier, const std::string& system, const std::string& user, int max_tokens);
  void print_status(const PoolResult& r);
  void remember(const std::string& prompt, const std::string& answer, const std::string& route, const PoolResult& r);
  ChatRequest chat_request(const nlohmann::json& messages) const;

  // Tools (agent_tools.cpp).
  void search_turn(const std::string& text, const std::string& explicit_query);
  void shell_turn(const std::string& text, const std::string& explicit_command);
  void read_file_command(const std::string& args);
  // /doc <file|url> <question> (doc_tool.cpp): pages through a document longer than the context.
  void doc_command(const std::string& args);
  void write_file_command(const std::string& args, bool edit);

  // Slash commands (agent_commands.cpp). Returns false to quit.
  bool run_command(const std::string& name, const std::string& args);
  void cmd_model(const std::string& args);
  void cmd_stats();
  void cmd_cost();
  void cmd_bench();
  void cmd_grade(const std::string& grade);
  void cmd_compact();
  void cmd_loop(const std::string& args);
  void cmd_tools();
  // /image PATH, /audio PATH (media_commands.cpp): attach to the next message; no PATH lists them.
  void cmd_attach(MediaKind kind, const std::string& args);
  // Which media kinds a turn may send as media and what the backend must read: the kinds `media`
  // carries are required; the history's other kinds are kept when a backend on the chain reads
  // them too (else they go as notes). False, with a message printed, when no backend reads `media`.
  bool media_routing(Tier tier, const std::vector<Attachment>& media, std::set<MediaKind>* allowed,
                     std::vector<std::string>* required);

  std::ostream& out() { return *io_.out; }
  bool cancelled() const { return io_.cancel && io_.cancel->load(); }
  std::string dim(const std::string& s) const;

  AgentConfig config_;
  BackendPool* pool_;
  AgentIo io_;
  Conversation conversation_;
  SessionStats stats_;
  int unanswered_ = 0;
  bool routed_ = true;
  bool thinking_ = false;
  bool auto_tiers_ = true;
  // The last answer, for /good and /bad.
  std::string last_prompt_, last_answer_, last_route_, last_backend_;
  double last_tok_s_ = 0;
  // Attachments for the next message (/image, /audio).
  std::vector<Attachment> pending_media_;
  // /loop state.
  std::string loop_prompt_;
  double loop_interval_s_ = 0;
  std::chrono::steady_clock::time_point loop_next_{};
};

// Parses an interval such as "30", "30s", "5m", "1h" into seconds (> 0). nullopt when invalid.
std::optional<double> parse_interval(const std::string& text);

// The body of the first fenced code block in `reply` (without the fences), or the trimmed reply
// when it has none.
std::string extract_code_block(const std::string& reply);

}  // namespace sniper::agent

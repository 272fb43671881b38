// SPDX-License-Identifier: MIT
// Reference renders of a tool-heavy conversation through the real Qwen3.5 and Gemma 4 chat
// templates (../shared/tokenizer/<model>/chat_template.jinja): nested parameter schemas (objects,
// arrays of objects, enums, nullable), call arguments of every JSON type (Qwen3.5 writes them with
// tojson or Python's str(), Gemma 4 with its own <|"|> syntax), parallel calls with their tool
// responses, reasoning in content, thinking on and off. The expected strings were produced by
// Python Jinja2 3.1.6 configured as transformers does (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson), never by this interpreter.
#include "golden/shared_dir.h"
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sniper {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// messages and tools of the conversation (the same for both models).
constexpr const char* kConversation = R"ref({
 "messages": [
  {
   "role": "system",
   "content": "  Be precise.  "
  },
  {
   "role": "user",
   "content": "Find papers, then tell me the time."
  },
  {
   "role": "assistant",
   "content": "",
   "reasoning_content": "Two tools.",
   "tool_calls": [
    {
     "id": "c1",
     "type": "function",
     "function": {
      "name": "search",
      "arguments": {
       "query": "ssd \"cache\"",
       "limit": 3,
       "mode": "deep",
       "tags": [
        "a",
        "b"
       ],
       "filters": {
        "year": 2024,
        "lang": "en"
       },
       "exact": true,
       "score": 0.5,
       "none": null
      }
     }
    },
    {
     "id": "c2",
     "type": "function",
     "function": {
      "name": "now",
      "arguments": {}
     }
    }
   ]
  },
  {
   "role": "tool",
   "tool_call_id": "c1",
   "content": "[{\"title\": \"X\"}]"
  },
  {
   "role": "tool",
   "tool_call_id": "c2",
   "content": "12:00"
  },
  {
   "role": "assistant",
   "content": "<think>\nok\n</think>\n\nFound X at 12:00."
  },
  {
   "role": "user",
   "content": "Thanks"
  }
 ],
 "tools": [
  {
   "type": "function",
   "function": {
    "name": "search",
    "description": "Search «docs».",
    "parameters": {
     "type": "object",
     "properties": {
      "query": {
       "type": "string",
       "description": "Query text"
      },
      "limit": {
       "type": "integer",
       "nullable": true
      },
      "mode": {
       "type": "string",
       "enum": [
        "fast",
        "deep"
       ]
      },
      "tags": {
       "type": "array",
       "items": {
        "type": "string"
       }
      },
      "filters": {
       "type": "object",
       "description": "Filters",
       "properties": {
        "year": {
         "type": "integer"
        },
        "lang": {
         "type": "string",
         "enum": [
          "en",
          "fr"
         ]
        }
       },
       "required": [
        "year"
       ]
      },
      "points": {
       "type": "array",
       "items": {
        "type": "object",
        "properties": {
         "x": {
          "type": "number"
         },
         "y": {
          "type": "number"
         }
        },
        "required": [
         "x"
        ]
       }
      }
     },
     "required": [
      "query",
      "mode"
     ]
    }
   }
  },
  {
   "type": "function",
   "function": {
    "name": "now",
    "description": "Time.",
    "parameters": {
     "type": "object",
     "properties": {}
    }
   }
  }
 ]
})ref";

constexpr const char* kGemma4ThinkingExpected = R"ref(<bos><|turn>system
<|think|>
Be precise.<|tool>declaration:search{description:<|"|>Search «docs».<|"|>,parameters:{properties:{filters:{description:<|"|>Filters<|"|>,properties:{lang:{enum:[<|"|>en<|"|>,<|"|>fr<|"|>],type:<|"|>STRING<|"|>},year:{type:<|"|>INTEGER<|"|>}},required:[<|"|>year<|"|>],type:<|"|>OBJECT<|"|>},limit:{nullable:true,type:<|"|>INTEGER<|"|>},mode:{enum:[<|"|>fast<|"|>,<|"|>deep<|"|>],type:<|"|>STRING<|"|>},points:{items:{properties:{x:{type:<|"|>NUMBER<|"|>},y:{type:<|"|>NUMBER<|"|>}},required:[<|"|>x<|"|>],type:<|"|>OBJECT<|"|>},type:<|"|>ARRAY<|"|>},query:{description:<|"|>Query text<|"|>,type:<|"|>STRING<|"|>},tags:{items:{type:<|"|>STRING<|"|>},type:<|"|>ARRAY<|"|>}},required:[<|"|>query<|"|>,<|"|>mode<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><|tool>declaration:now{description:<|"|>Time.<|"|>,parameters:{type:<|"|>OBJECT<|"|>}}<tool|><turn|>
<|turn>user
Find papers, then tell me the time.<turn|>
<|turn>model
<|tool_call>call:search{exact:true,filters:{lang:<|"|>en<|"|>,year:2024},limit:3,mode:<|"|>deep<|"|>,none:None,query:<|"|>ssd "cache"<|"|>,score:0.5,tags:[<|"|>a<|"|>,<|"|>b<|"|>]}<tool_call|><|tool_call>call:now{}<tool_call|><|tool_response>response:search{value:<|"|>[{"title": "X"}]<|"|>}<tool_response|><|tool_response>response:now{value:<|"|>12:00<|"|>}<tool_response|><think>
ok
</think>

Found X at 12:00.<turn|>
<|turn>user
Thanks<turn|>
<|turn>model
)ref";

constexpr const char* kGemma4Expected = R"ref(<bos><|turn>system
Be precise.<|tool>declaration:search{description:<|"|>Search «docs».<|"|>,parameters:{properties:{filters:{description:<|"|>Filters<|"|>,properties:{lang:{enum:[<|"|>en<|"|>,<|"|>fr<|"|>],type:<|"|>STRING<|"|>},year:{type:<|"|>INTEGER<|"|>}},required:[<|"|>year<|"|>],type:<|"|>OBJECT<|"|>},limit:{nullable:true,type:<|"|>INTEGER<|"|>},mode:{enum:[<|"|>fast<|"|>,<|"|>deep<|"|>],type:<|"|>STRING<|"|>},points:{items:{properties:{x:{type:<|"|>NUMBER<|"|>},y:{type:<|"|>NUMBER<|"|>}},required:[<|"|>x<|"|>],type:<|"|>OBJECT<|"|>},type:<|"|>ARRAY<|"|>},query:{description:<|"|>Query text<|"|>,type:<|"|>STRING<|"|>},tags:{items:{type:<|"|>STRING<|"|>},type:<|"|>ARRAY<|"|>}},required:[<|"|>query<|"|>,<|"|>mode<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><|tool>declaration:now{description:<|"|>Time.<|"|>,parameters:{type:<|"|>OBJECT<|"|>}}<tool|><turn|>
<|turn>user
Find papers, then tell me the time.<turn|>
<|turn>model
<|tool_call>call:search{exact:true,filters:{lang:<|"|>en<|"|>,year:2024},limit:3,mode:<|"|>deep<|"|>,none:None,query:<|"|>ssd "cache"<|"|>,score:0.5,tags:[<|"|>a<|"|>,<|"|>b<|"|>]}<tool_call|><|tool_call>call:now{}<tool_call|><|tool_response>response:search{value:<|"|>[{"title": "X"}]<|"|>}<tool_response|><|tool_response>response:now{value:<|"|>12:00<|"|>}<tool_response|><think>
ok
</think>

Found X at 12:00.<turn|>
<|turn>user
Thanks<turn|>
<|turn>model
<|channel>thought
<channel|>)ref";

// The two Qwen3.5 renders are the same up to the generation prompt: thinking on opens a think
// block, thinking off writes an empty one.
constexpr const char* kQwen35Common = R"ref(<|im_start|>system
# Tools

You have access to the following functions:

<tools>
{"type": "function", "function": {"name": "search", "description": "Search «docs».", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "Query text"}, "limit": {"type": "integer", "nullable": true}, "mode": {"type": "string", "enum": ["fast", "deep"]}, "tags": {"type": "array", "items": {"type": "string"}}, "filters": {"type": "object", "description": "Filters", "properties": {"year": {"type": "integer"}, "lang": {"type": "string", "enum": ["en", "fr"]}}, "required": ["year"]}, "points": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}}}, "required": ["query", "mode"]}}}
{"type": "function", "function": {"name": "now", "description": "Time.", "parameters": {"type": "object", "properties": {}}}}
</tools>

If you choose to call a function ONLY reply in the following format with NO suffix:

<tool_call>
<function=example_function_name>
<parameter=example_parameter_1>
value_1
</parameter>
<parameter=example_parameter_2>
This is the value for the second parameter
that can span
multiple lines
</parameter>
</function>
</tool_call>

<IMPORTANT>
Reminder:
- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags
- Required parameters MUST be specified
- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after
- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls
</IMPORTANT>

Be precise.<|im_end|>
<|im_start|>user
Find papers, then tell me the time.<|im_end|>
<|im_start|>assistant
<tool_call>
<function=search>
<parameter=query>
ssd "cache"
</parameter>
<parameter=limit>
3
</parameter>
<parameter=mode>
deep
</parameter>
<parameter=tags>
["a", "b"]
</parameter>
<parameter=filters>
{"year": 2024, "lang": "en"}
</parameter>
<parameter=exact>
True
</parameter>
<parameter=score>
0.5
</parameter>
<parameter=none>
None
</parameter>
</function>
</tool_call>
<tool_call>
<function=now>
</function>
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
[{"title": "X"}]
</tool_response>
<tool_response>
12:00
</tool_response><|im_end|>
<|im_start|>assistant
Found X at 12:00.<|im_end|>
<|im_start|>user
Thanks<|im_end|>
<|im_start|>assistant
)ref";
const std::string kQwen35ThinkingExpected = std::string(kQwen35Common) + "<think>\n";
const std::string kQwen35Expected = std::string(kQwen35Common) + "<think>\n\n</think>\n\n";

std::string render_model(const std::string& model, bool enable_thinking) {
  const std::string source = read_file(shared_dir() + "/tokenizer/" + model + "/chat_template.jinja");
  EXPECT_FALSE(source.empty()) << model;
  auto tpl = ChatTemplate::parse(source);
  if (!tpl.ok()) return "PARSE ERROR: " + tpl.error().message;
  nlohmann::ordered_json context = nlohmann::ordered_json::parse(kConversation);
  context["add_generation_prompt"] = true;
  context["enable_thinking"] = enable_thinking;
  context["bos_token"] = model == "gemma4" ? "<bos>" : "";
  context["eos_token"] = "<eos>";
  auto out = tpl->render(context);
  if (!out.ok()) return "RENDER ERROR: " + out.error().message;
  return out.value();
}

TEST(ChatTemplateTools, Gemma4MatchesJinja2) {
  EXPECT_EQ(render_model("gemma4", true), kGemma4ThinkingExpected);
  EXPECT_EQ(render_model("gemma4", false), kGemma4Expected);
}

TEST(ChatTemplateTools, Qwen35MatchesJinja2) {
  EXPECT_EQ(render_model("qwen35", true), kQwen35ThinkingExpected);
  EXPECT_EQ(render_model("qwen35", false), kQwen35Expected);
}

}  // namespace
}  // namespace sniper

#pragma once
// What the remote tests share: PASS/FAIL lines, the RemoteError a call throws, and a small httplib
// server on a free loopback port for the fake servers (test_remote_client) and the checks beside the
// real one (test_remote_serve).
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "remote/openai_client.h"

namespace wb_remote_test {

inline int g_failures = 0;

inline void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok) ++g_failures;
}

// The exit status of main: 1 on any failure, with a last line that counts them.
inline int finish() {
    std::printf("%s\n", g_failures == 0 ? "all passed" : (std::to_string(g_failures) + " failed").c_str());
    return g_failures == 0 ? 0 : 1;
}

// The RemoteError that f throws; none when it throws none (no sentinel kind that a check could
// mistake for a real error).
template <class F>
std::optional<wb::remote::RemoteError> error_of(F&& f) {
    try {
        f();
    } catch (const wb::remote::RemoteError& e) {
        return e;
    }
    return std::nullopt;
}

inline bool has(const std::optional<wb::remote::RemoteError>& e, const std::string& part) {
    return e && std::string(e->what()).find(part) != std::string::npos;
}

inline std::string what_of(const std::optional<wb::remote::RemoteError>& e) {
    return e ? e->what() : "(no error)";
}

// The error is of this kind and its message has this part; the PASS/FAIL line shows the message.
inline void expect(const std::string& what, const std::optional<wb::remote::RemoteError>& e,
                   wb::remote::RemoteErrorKind kind, const std::string& part) {
    report(e && e->kind() == kind && has(e, part), what + ": " + what_of(e));
}

// An httplib server on a free loopback port, serving on its own thread until destroyed. Routes are
// added to `http` before start().
struct FakeServer {
    httplib::Server http;
    int port = 0;
    std::thread thread;

    void start() {
        port = http.bind_to_any_port("127.0.0.1");
        thread = std::thread([this] { http.listen_after_bind(); });
        // stop() before the loop runs would not end it: the destructor would wait for ever.
        while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~FakeServer() {
        http.stop();
        if (thread.joinable()) thread.join();
    }
    std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

}  // namespace wb_remote_test

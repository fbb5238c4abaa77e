#pragma once
// cpp-httplib's server with a deadline on reading each request (against "slowloris" clients).
//
// httplib 0.11's own limits do not bound how long a request may take to arrive: its read timeout
// (set_read_timeout, 5 s) is the longest wait for one read, so a client that sends a byte every few
// seconds is never timed out; the keep-alive timeout bounds only the quiet before a request's first
// byte; set_payload_max_length bounds a body's size, not its time; and 0.11 has no limit on the
// number of header lines. Such a client holds one of the server's connection threads as long as it
// keeps sending, and as many such clients as there are threads stop the server answering anyone.
//
// Here a request (its line, headers and body) must arrive within `request_timeout` of its first
// byte, or it is answered 408 with `timeout_body` (JSON) and its connection is closed, which gives
// the thread back. What the handler writes afterwards is not bounded (a streamed reply lasts as long
// as its generation). This overrides Server::process_and_close_socket, httplib's extension point for
// its own SSLServer, and mirrors 0.11's keep-alive loop there: the build refuses other versions.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <utility>

namespace wb::server {

class GuardedServer : public httplib::Server {
public:
    // wb::Error when the pipe that wakes the connection threads cannot be made.
    GuardedServer(std::chrono::milliseconds request_timeout, std::string timeout_body);
    ~GuardedServer() override;
    GuardedServer(const GuardedServer&) = delete;
    GuardedServer& operator=(const GuardedServer&) = delete;

    // httplib's stop(), and every connection thread's wait on its socket (for a request, for room to
    // write a reply, for the next request of a keep-alive connection) ends at once: httplib's
    // listen_after_bind() returns only when those threads have, and a client that does not read its
    // reply would otherwise hold it for the write timeout (the app stops serving on its GUI thread).
    // A socket that is ready still goes first, so a client that reads gets the end of its reply.
    void stop_now();
    // Serves with `n` connection threads (in place of new_task_queue). A kept-alive connection holds
    // its thread while it waits for its next request, up to the keep-alive timeout (5 s): a connection
    // that comes when every thread is taken makes one such idle connection close at once (as at its
    // timeout, which HTTP clients expect of a kept-alive connection) and takes its thread, so idle
    // clients cannot keep a new one waiting.
    void set_thread_count(size_t n);
    // Called on a connection thread of a GuardedServer (a handler, a content provider): the rest of the
    // reply it is writing must reach the client within the request timeout, else the connection is
    // dropped. For a reply whose content is all there (a generation that has ended), so that a client
    // that reads slowly cannot hold the thread beyond that: each wait for room is bounded by the
    // write timeout, but a client that reads a little now and then never hits it. Elsewhere: nothing.
    static void limit_reply_time();

    // Called once for every request answered, with its status: 408 for one that missed its deadline
    // (httplib itself would log those as 400, or not at all when the request line was cut short).
    // Use this instead of set_logger.
    void set_status_logger(std::function<void(int status)> log);
    // Closes the listening socket of a server that bound and will never listen_after_bind (httplib's
    // stop() acts only on a running server, so the port would stay taken until the process ends).
    void close_unused_listener();

private:
    bool process_and_close_socket(socket_t sock) override;
    // The wait for a connection's next request (its first included): > 0 when bytes (or the client's
    // end) come, 0 at the keep-alive timeout, at a stop, or (may_give_way: it has been answered before)
    // when this connection gives its thread to one waiting for a thread; < 0 on a socket error.
    int wait_for_request(socket_t sock, bool may_give_way);

    const std::chrono::milliseconds request_timeout_;
    const std::string timeout_body_;
    std::function<void(int)> log_;
    int wake_[2] = {-1, -1};  // a pipe: stop_now() writes to [1], and every wait polls [0] beside its socket
    // set_thread_count: the threads, the connections that have or wait for one, and a pipe with a byte
    // for each connection that found every thread taken (an idle connection that reads one gives way).
    size_t threads_ = 0;
    std::atomic<size_t> taken_{0};
    int give_way_[2] = {-1, -1};
};

}  // namespace wb::server

#include "server/guarded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "util/error.h"

// The keep-alive loop below is httplib 0.11's (detail::process_server_socket_core and keep_alive), and
// process_request's signature is 0.11's; later versions changed both. Check them against the new
// version's Server::process_and_close_socket before changing this.
static_assert(std::string_view(CPPHTTPLIB_VERSION).substr(0, 5) == "0.11.",
              "GuardedServer mirrors cpp-httplib 0.11's Server::process_and_close_socket");

namespace wb::server {

GuardedServer::GuardedServer(std::chrono::milliseconds request_timeout, std::string timeout_body)
    : request_timeout_(request_timeout), timeout_body_(std::move(timeout_body)) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0 || ::pipe2(give_way_, O_CLOEXEC | O_NONBLOCK) != 0) {
        const std::string why = std::strerror(errno);
        for (int fd : {wake_[0], wake_[1]})  // no destructor runs for a constructor that throws
            if (fd >= 0) ::close(fd);
        throw Error("the server cannot make its wake-up pipes: " + why);
    }
}

GuardedServer::~GuardedServer() {
    for (int fd : {wake_[0], wake_[1], give_way_[0], give_way_[1]})
        if (fd >= 0) ::close(fd);
}

namespace {

// httplib's pool, counting the connections that have a thread or wait for one: one that finds every
// thread taken writes a byte to the give-way pipe.
class GivingPool : public httplib::TaskQueue {
public:
    GivingPool(size_t n, std::atomic<size_t>& taken, int give_way)
        : pool_(n), n_(n), taken_(taken), give_way_(give_way) {}
    void enqueue(std::function<void()> fn) override {
        if (taken_.fetch_add(1) >= n_) {
            const char byte = 1;
            (void)!::write(give_way_, &byte, 1);  // a full pipe (thousands waiting) drops one: no harm
        }
        pool_.enqueue([this, fn = std::move(fn)] {
            fn();
            taken_.fetch_sub(1);
        });
    }
    void shutdown() override { pool_.shutdown(); }

private:
    httplib::ThreadPool pool_;
    const size_t n_;
    std::atomic<size_t>& taken_;
    const int give_way_;
};

}  // namespace

void GuardedServer::set_thread_count(size_t n) {
    threads_ = n;
    new_task_queue = [this] { return new GivingPool(threads_, taken_, give_way_[1]); };
}

void GuardedServer::stop_now() {
    // Never read: once written, every poll of wake_[0] returns at once, the later ones included.
    const char byte = 1;
    (void)!::write(wake_[1], &byte, 1);
    stop();
}

void GuardedServer::close_unused_listener() {
    const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
    if (sock != INVALID_SOCKET) ::close(sock);
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// poll() for `events` up to `timeout`: > 0 when they came, 0 on timeout or once the server stops
// (`wake` readable; a socket that is ready goes first), < 0 on a socket error.
int wait_for(socket_t sock, short events, milliseconds timeout, int wake) {
    const auto until = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::ceil<milliseconds>(until - Clock::now());
        pollfd p[2] = {{sock, events, 0}, {wake, POLLIN, 0}};
        const int rc = ::poll(p, 2, int(std::max(left, milliseconds(0)).count()));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || (p[0].revents & (POLLERR | POLLNVAL))) return -1;
        if (p[0].revents) return 1;
        return 0;
    }
}

milliseconds ms_of(time_t sec, time_t usec) { return milliseconds(sec * 1000 + usec / 1000); }

void address_of(socket_t sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    const int rc = peer ? getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len)
                        : getsockname(sock, reinterpret_cast<sockaddr*>(&a), &len);
    if (rc != 0) return;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
        inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
        port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
        inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
        port = ntohs(v6->sin6_port);
    }
    ip = buf;
}

// A connection's socket as httplib's Stream, reading through a buffer as httplib's own SocketStream
// does (its header parser reads one byte at a time). Each request has a deadline, from its first byte
// (begin_request) to the end of its processing: past it a read answers 408 and fails, and so does every
// later read or write on the connection. Only reading the request waits on the socket's input, so the
// deadline bounds the request line, headers and body (a 100-continue answer between them included),
// and not the reply.
class DeadlineStream : public httplib::Stream {
public:
    DeadlineStream(socket_t sock, milliseconds read_timeout, milliseconds write_timeout, milliseconds request_timeout,
                   const std::string& timeout_body, int wake)
        : sock_(sock), read_timeout_(read_timeout), write_timeout_(write_timeout), request_timeout_(request_timeout),
          timeout_body_(timeout_body), wake_(wake) {}

    void begin_request() {
        deadline_ = Clock::now() + request_timeout_;
        reply_deadline_.reset();
        logged_ = false;
    }
    // The rest of the current reply must be written within the request timeout (limit_reply_time).
    void limit_reply() { reply_deadline_ = Clock::now() + request_timeout_; }
    bool buffered() const { return pos_ < end_; }
    bool expired() const { return expired_; }
    // Whether httplib's logger saw the current request (it does not for a request line cut short).
    bool logged() const { return logged_; }
    void mark_logged() { logged_ = true; }

    bool is_readable() const override { return buffered() || wait_for(sock_, POLLIN, read_wait(), wake_) > 0; }
    // As later httplib versions: writable, and the client has not closed its side (a peek finds no end
    // of stream), so a reply whose client left is found out before its next write. A client that only
    // half-closes (shutdown(SHUT_WR) after sending its request, still reading) counts as gone too: the
    // peek cannot tell the two apart, and later httplib versions treat it the same way.
    bool is_writable() const override {
        const milliseconds wait = write_wait();
        if (expired_ || wait < milliseconds(0) || wait_for(sock_, POLLOUT, wait, wake_) <= 0) return false;
        char c;
        const ssize_t n = ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
    }
    ssize_t read(char* ptr, size_t size) override {
        if (expired_) return -1;
        if (!buffered()) {
            const ssize_t n = fill();
            if (n <= 0) return n;
        }
        const size_t n = std::min(size, end_ - pos_);
        std::memcpy(ptr, buf_ + pos_, n);
        pos_ += n;
        return ssize_t(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        // httplib answers a request it could not read with 400 ("malformed"); the 408 went out instead.
        if (expired_) return -1;
        // All of it, as a blocking send would: httplib writes a response's body in one call and takes
        // any non-negative count as success. Each wait for room is bounded by the write timeout, and
        // by the reply's deadline when it has one.
        size_t sent = 0;
        while (sent < size) {
            const milliseconds wait = write_wait();
            if (wait < milliseconds(0) || wait_for(sock_, POLLOUT, wait, wake_) <= 0) return -1;
            const ssize_t n = ::send(sock_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n < 0) return -1;
            sent += size_t(n);
        }
        return ssize_t(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, false, ip, port); }
    socket_t socket() const override { return sock_; }

private:
    // The write timeout, cut short by the reply's deadline; negative past it (nothing more is written).
    milliseconds write_wait() const {
        if (!reply_deadline_) return write_timeout_;
        const auto now = Clock::now();
        if (now >= *reply_deadline_) return milliseconds(-1);
        return std::min(write_timeout_, std::chrono::ceil<milliseconds>(*reply_deadline_ - now));
    }
    // The read timeout, cut short by the request's deadline.
    milliseconds read_wait() const {
        const auto left = std::chrono::ceil<milliseconds>(deadline_ - Clock::now());
        return std::max(milliseconds(0), std::min(read_timeout_, left));
    }
    // Refills the buffer: > 0 bytes read, 0 at the client's end of stream, -1 on an error, a timeout,
    // the deadline (408 sent) or the server stopping.
    ssize_t fill() {
        if (Clock::now() >= deadline_) return answer_timeout();
        if (!is_readable()) {
            if (Clock::now() >= deadline_) return answer_timeout();
            return -1;
        }
        for (;;) {
            const ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
            if (n < 0 && errno == EINTR) continue;
            pos_ = 0;
            end_ = n > 0 ? size_t(n) : 0;
            return n;
        }
    }
    // 408 and the connection's end, written once, as far as the socket takes it without waiting.
    ssize_t answer_timeout() {
        expired_ = true;
        const std::string all = "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\nContent-Length: " + std::to_string(timeout_body_.size()) +
                                "\r\n\r\n" + timeout_body_;
        (void)::send(sock_, all.data(), all.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        return -1;
    }

    const socket_t sock_;
    const milliseconds read_timeout_, write_timeout_, request_timeout_;
    const std::string& timeout_body_;
    const int wake_;
    Clock::time_point deadline_ = Clock::now();
    std::optional<Clock::time_point> reply_deadline_;  // limit_reply() of the current request
    bool expired_ = false;  // a request's deadline passed: 408 sent, nothing more is read or written
    bool logged_ = false;
    char buf_[4096];
    size_t pos_ = 0, end_ = 0;
};

// The connection this thread is processing, for the logger (httplib gives it only the request).
thread_local DeadlineStream* t_stream = nullptr;

}  // namespace

void GuardedServer::limit_reply_time() {
    if (t_stream) t_stream->limit_reply();
}

void GuardedServer::set_status_logger(std::function<void(int)> log) {
    log_ = std::move(log);
    set_logger([this](const httplib::Request&, const httplib::Response& res) {
        if (t_stream) t_stream->mark_logged();
        log_(t_stream && t_stream->expired() ? 408 : res.status);
    });
}

int GuardedServer::wait_for_request(socket_t sock, bool may_give_way) {
    const auto until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    for (;;) {
        const auto left = std::max(std::chrono::ceil<milliseconds>(until - Clock::now()), milliseconds(0));
        pollfd p[3] = {{sock, POLLIN, 0}, {wake_[0], POLLIN, 0}, {give_way_[0], POLLIN, 0}};
        const int rc = ::poll(p, may_give_way ? 3 : 2, int(left.count()));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || (p[0].revents & (POLLERR | POLLNVAL))) return -1;
        if (p[0].revents) return 1;
        if (rc == 0 || p[1].revents) return 0;
        // A connection found every thread taken. Its byte is this connection's to take if it is still
        // waiting (one thread has not freed meanwhile); a byte another idle connection took, or a stale
        // one (read and dropped), leaves this one waiting.
        const bool waiting = taken_.load() > threads_;
        char byte;
        if (::read(give_way_[0], &byte, 1) == 1 && waiting) return 0;
    }
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
    DeadlineStream strm(sock, ms_of(read_timeout_sec_, read_timeout_usec_),
                        ms_of(write_timeout_sec_, write_timeout_usec_), request_timeout_, timeout_body_, wake_[0]);
    t_stream = &strm;
    bool ok = false;
    // As httplib: up to keep_alive_max_count_ requests on one connection, each after at most
    // keep_alive_timeout_sec_ of quiet (a request already buffered, pipelined, starts at once).
    for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
        // Only a connection kept alive after a reply gives way: a new one's request may still be on
        // its way, and closing it unanswered would lose it (a POST is not retried).
        const bool kept_alive = left < keep_alive_max_count_;
        if (!strm.buffered() && wait_for_request(sock, kept_alive) <= 0) break;
        strm.begin_request();
        bool closed = false;
        ok = process_request(strm, left == 1, closed, nullptr);
        if (strm.expired() && !strm.logged() && log_) log_(408);
        if (!ok || closed || strm.expired()) break;
    }
    t_stream = nullptr;
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
}

}  // namespace wb::server

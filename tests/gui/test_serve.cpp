// The desktop app serving its loaded model (issue 19 item 2), in the main window with the default
// model and real HTTP requests (cpp-httplib's client, on a free port): a chat completion, whole and
// streamed, becomes an "API: ..." conversation in the chat list whose reply is the one the client
// got, its tokens in the panels; a request waits behind the user's own reply, which is saved, not
// lost; a client that hangs up stops its reply; /v1/completions is a 400 that says why; a port that
// will not bind and a non-loopback host without a key leave the toggle off and the settings
// unsaved; loading a model stops serving; the port is free after a stop, which a client that does
// not read its reply does not hold up; a prompt is counted as the worker counts it (its template,
// the room for the reply), so one over that edge is a 400.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QAction>
#include <QDialog>
#include <QLineEdit>
#include <QSpinBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTcpServer>
#include <QtTest>

#include <chrono>
#include <future>

#include "chat_controller.h"
#include "chat_template_setting.h"
#include "context_budget.h"
#include "engine/chat_prompt.h"
#include "inference_worker.h"
#include "conversation_list.h"
#include "conversation_store.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "model/model_paths.h"
#include "serve_controller.h"
#include "serve_executor.h"
#include "serve_menu.h"
#include "theme.h"

namespace {

constexpr int kTimeoutMs = 180000;

struct Reply {
    int status = 0;
    std::string body;
};

// The request runs on a thread of its own: the app answers it on this (the GUI) thread.
std::future<Reply> postAsync(int port, const std::string& path, const std::string& body,
                             std::function<bool(const std::string&)> keepReading = {}) {
    return std::async(std::launch::async, [=] {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(kTimeoutMs / 1000, 0);
        Reply out;
        if (!keepReading) {
            if (auto r = c.Post(path, body, "application/json")) out = {r->status, r->body};
            return out;
        }
        httplib::Request req;
        req.method = "POST";
        req.path = path;
        req.body = body;
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
            out.body.append(data, n);
            return keepReading(out.body);
        };
        c.send(req);
        return out;
    });
}

bool ready(std::future<Reply>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

// Waits for the reply, the GUI thread's events running meanwhile; status 0 when none came in time.
Reply finish(std::future<Reply>& f) {
    QElapsedTimer t;
    t.start();
    while (!ready(f) && t.elapsed() < kTimeoutMs) QTest::qWait(10);
    return ready(f) ? f.get() : Reply{};
}

std::string chatBody(const QString& user, int maxTokens, bool stream, const QString& system = {}) {
    QJsonArray messages;
    if (!system.isEmpty()) messages.append(QJsonObject{{"role", "system"}, {"content", system}});
    messages.append(QJsonObject{{"role", "user"}, {"content", user}});
    QJsonObject o{{"messages", messages}, {"max_tokens", maxTokens}, {"temperature", 0.0}, {"stream", stream}};
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

// The content of a whole reply, and of a streamed one (its events' deltas joined).
QString wholeContent(const std::string& body) {
    const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
    return o["choices"].toArray().at(0).toObject()["message"].toObject()["content"].toString();
}
QString streamedContent(const std::string& body, int* events) {
    QString text;
    *events = 0;
    for (const QByteArray& line : QByteArray::fromStdString(body).split('\n')) {
        if (!line.startsWith("data: {")) continue;
        const QJsonObject o = QJsonDocument::fromJson(line.mid(6)).object();
        text += o["choices"].toArray().at(0).toObject()["delta"].toObject()["content"].toString();
        ++*events;
    }
    return text;
}

bool startAndWait(MainWindow& w) {
    QSignalSpy loaded(w.controller(), &ChatController::modelLoaded);
    w.start();
    return loaded.wait(kTimeoutMs);
}

// Turns serving on through the menu's toggle with these settings; the port it got (0: it failed).
int serveFrom(MainWindow& w, const QString& host, int port, const QString& key = {}) {
    ServeSettings s;
    s.host = host;
    s.port = port;
    s.apiKey = key;
    w.serveMenu()->setPending(s);
    w.serveMenu()->toggleAction()->trigger();
    return w.serveController()->isServing() ? w.serveController()->port() : 0;
}

bool portIsFree(int port) {
    QTcpServer probe;
    return probe.listen(QHostAddress::LocalHost, quint16(port));
}

}  // namespace

class TestServe : public QObject {
    Q_OBJECT

    MainWindow* m_w = nullptr;

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_serve");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL("default model missing: run scripts/fetch-models.sh");
        m_w = new MainWindow;
        m_w->show();
        QVERIFY(startAndWait(*m_w));
    }
    void cleanupTestCase() { delete m_w; }
    void cleanup() {
        if (m_w->serveController()->isServing()) m_w->serveMenu()->toggleAction()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(!m_w->controller()->isGenerating(), kTimeoutMs);
    }

    // The app's queue alone: 16 requests wait, the 17th is refused (the server's 429); a request taken
    // by the GUI thread frees its place; one whose client left ends at once; a shutdown ends them all.
    void theQueueHoldsSixteenRequests() {
        int wakes = 0;
        AppJobExecutor e([&] { ++wakes; }, 512);
        const auto job = [] { return std::make_shared<wb::server::Job>(std::vector<int32_t>{1, 2}, wb::SamplingParams{}, false, 0); };
        std::vector<std::shared_ptr<wb::server::Job>> jobs;
        for (int i = 0; i < AppJobExecutor::kCapacity; ++i) {
            jobs.push_back(job());
            QVERIFY(e.submit(jobs.back()));
        }
        QCOMPARE(wakes, AppJobExecutor::kCapacity);
        QVERIFY(!e.submit(job()));
        const auto running = e.take_next();
        QCOMPARE(running, jobs[0]);
        QCOMPARE(e.busy(), 1);
        QVERIFY(!e.take_next());  // one at a time: the app has one worker
        QVERIFY(e.submit(job()));
        QCOMPARE(e.waiting(), AppJobExecutor::kCapacity);
        e.cancel(*jobs[5]);
        QVERIFY(jobs[5]->finished());
        QCOMPARE(e.waiting(), AppJobExecutor::kCapacity - 1);
        e.token(7, {"x", {}});
        e.shutdown();
        QVERIFY(running->finished() && running->cancelled_for_shutdown());
        QCOMPARE(running->result().tokens, std::vector<int32_t>{7});
        QVERIFY(jobs[6]->finished());
        QCOMPARE(jobs[6]->result().reason, wb::StopReason::ERROR);
        QVERIFY(!e.submit(job()));
    }

    void aWholeReplyBecomesAConversation() {
        MainWindow& w = *m_w;
        // The user's chat has a grammar and a stop string: another program's request gets neither.
        wb::SamplingParams panel = w.controller()->samplingParams();
        panel.stop = {"zzz"};
        panel.grammar = "root ::= \"yes\"";
        panel.grammar_mode = wb::GrammarMode::GBNF;
        panel.grammar_source = panel.grammar;
        w.controller()->setSamplingParams(panel);
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY2(port > 0, qPrintable(w.serveMenu()->lastError()));
        QVERIFY(w.serveMenu()->toggleAction()->isChecked());
        QCOMPARE(w.serveMenu()->statusLabel()->text(), QString("Serving on http://127.0.0.1:%1").arg(port));
        QVERIFY(!w.serveMenu()->statusLabel()->isHidden());
        // Saved once the start succeeded.
        QCOMPARE(QSettings().value("serve/port").toInt(), 0);

        auto f = postAsync(port, "/v1/chat/completions", chatBody("Name a colour.", 6, false, "Answer in one word."));
        const Reply r = finish(f);
        QCOMPARE(r.status, 200);
        const QString content = wholeContent(r.body);
        QVERIFY(!content.isEmpty());
        const Conversation& c = w.controller()->conversation();
        QCOMPARE(c.title, QString("API: Name a colour."));
        QCOMPARE(c.systemPrompt, QString("Answer in one word."));
        // The request's settings, without the end-of-turn stops the worker adds by itself.
        QCOMPARE(c.sampling.max_tokens, 6);
        QVERIFY(c.sampling.stop.empty());
        QVERIFY(c.sampling.grammar.empty());
        QVERIFY(content != "yes");
        QCOMPARE(c.messages.size(), 2);
        QCOMPARE(c.messages[0].content, QString("Name a colour."));
        QCOMPARE(c.messages[1].content, content);
        // The panels' data: every token with its candidates, as a reply of the user's own.
        QVERIFY(!c.messages[1].tokens.isEmpty());
        QVERIFY(!c.messages[1].tokens[0].candidates.empty());
        const QJsonObject usage = QJsonDocument::fromJson(QByteArray::fromStdString(r.body)).object()["usage"].toObject();
        QCOMPARE(usage["completion_tokens"].toInt(), int(c.messages[1].tokens.size()));
        // In the chat list, saved.
        const QString id = w.controller()->currentId();
        QVERIFY(!id.isEmpty());
        QVERIFY(w.conversationList()->shownIds().contains(id));
        const int at = w.conversationStore()->indexOf(id);
        QVERIFY(at >= 0);
        QCOMPARE(w.conversationStore()->conversations()[at].title, QString("API: Name a colour."));
    }

    void aStreamedReplyArrivesTokenByToken() {
        MainWindow& w = *m_w;
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        auto f = postAsync(port, "/v1/chat/completions", chatBody("Say hello to the world.", 8, true));
        const Reply r = finish(f);
        QCOMPARE(r.status, 200);
        int events = 0;
        const QString content = streamedContent(r.body, &events);
        QVERIFY(r.body.find("data: [DONE]") != std::string::npos);
        const Conversation& c = w.controller()->conversation();
        QCOMPARE(c.title, QString("API: Say hello to the world."));
        QCOMPARE(content, c.messages.last().content);
        // The role event, one per token (at least a few), the finish event.
        QVERIFY2(events >= 4, qPrintable(QString::number(events)));
    }

    void aRequestWaitsBehindTheUsersReply() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        ctl->newChat();
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 24;
        p.ignore_eos = true;
        ctl->setSamplingParams(p);
        QSignalSpy finished(ctl, &ChatController::generationFinished);
        QVERIFY(ctl->sendMessage("Count from 1 to 50."));
        auto f = postAsync(port, "/v1/chat/completions", chatBody("Name a fruit.", 4, false));
        QTRY_COMPARE_WITH_TIMEOUT(w.serveController()->executor()->waiting(), 1, kTimeoutMs);
        QVERIFY(ctl->isGenerating());
        QCOMPARE(ctl->conversation().messages.first().content, QString("Count from 1 to 50."));
        const Reply r = finish(f);
        QCOMPARE(r.status, 200);
        // The user's reply ran to its end first and is saved; the request's is a conversation of its own.
        QVERIFY(finished.size() >= 2);
        const GenerationSummary users = finished.at(0).at(0).value<GenerationSummary>();
        QCOMPARE(users.reason, wb::StopReason::MAX_TOKENS);
        const QVector<ConversationInfo>& all = w.conversationStore()->conversations();
        const auto mine = std::find_if(all.begin(), all.end(), [](const ConversationInfo& i) { return i.title == "Count from 1 to 50."; });
        QVERIFY(mine != all.end());
        QString error;
        const std::optional<Conversation> saved = w.conversationStore()->load(mine->id, &error);
        QVERIFY2(saved, qPrintable(error));
        QCOMPARE(saved->messages.size(), 2);
        QCOMPARE(saved->messages[1].content, users.text);
        QCOMPARE(ctl->conversation().title, QString("API: Name a fruit."));
        QVERIFY(ctl->currentId() != mine->id);
    }

    // A change the user made a moment ago (saved after a pause) is on disk before a request's
    // conversation takes the screen.
    void theUsersLatestChangeIsSavedFirst() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        ctl->newChat();
        QSignalSpy finished(ctl, &ChatController::generationFinished);
        QVERIFY(ctl->sendMessage("Name a tree."));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kTimeoutMs);
        const QString mine = ctl->currentId();
        ctl->setSystemPrompt("You are a botanist.");
        auto f = postAsync(port, "/v1/chat/completions", chatBody("Name a bird.", 3, false));
        QCOMPARE(finish(f).status, 200);
        QVERIFY(ctl->currentId() != mine);
        QString error;
        const std::optional<Conversation> saved = w.conversationStore()->load(mine, &error);
        QVERIFY2(saved, qPrintable(error));
        QCOMPARE(saved->systemPrompt, QString("You are a botanist."));
    }

    void aClientThatHangsUpStopsItsReply() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        QSignalSpy finished(ctl, &ChatController::generationFinished);
        QJsonObject o{{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Count to 500."}}}},
                      {"max_tokens", 400}, {"temperature", 0.0}, {"stream", true}, {"ignore_eos", true}};
        // Hangs up once two token events have come.
        auto f = postAsync(port, "/v1/chat/completions", QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString(),
                           [](const std::string& got) {
                               size_t n = 0;
                               for (size_t at = 0; (at = got.find("\"content\":", at)) != std::string::npos; ++at) ++n;
                               return n < 3;
                           });
        finish(f);
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kTimeoutMs);
        const GenerationSummary s = finished.last().at(0).value<GenerationSummary>();
        QCOMPARE(s.reason, wb::StopReason::STOPPED);
        QCOMPARE(ctl->conversation().title, QString("API: Count to 500."));
        QVERIFY(ctl->conversation().messages.last().tokens.size() < 400);
    }

    // The user's Stop ends another program's reply: its client gets what was generated, finished.
    void stopEndsTheClientsReply() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        QJsonObject o{{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Count to 900."}}}},
                      {"max_tokens", 400}, {"temperature", 0.0}, {"stream", true}, {"ignore_eos", true}};
        QSignalSpy tokens(ctl, &ChatController::tokenAppended);
        auto f = postAsync(port, "/v1/chat/completions", QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
        QTRY_VERIFY_WITH_TIMEOUT(tokens.size() >= 2, kTimeoutMs);
        QCOMPARE(ctl->conversation().title, QString("API: Count to 900."));
        ctl->stop();
        const Reply r = finish(f);
        QCOMPARE(r.status, 200);
        int events = 0;
        QCOMPARE(streamedContent(r.body, &events), ctl->conversation().messages.last().content);
        QVERIFY(ctl->conversation().messages.last().tokens.size() < 400);
        QVERIFY(r.body.find(R"("finish_reason":"stop")") != std::string::npos);
        QVERIFY(r.body.find("data: [DONE]") != std::string::npos);
    }

    // The worker renders an API request with the template the user chose, and keeps room for the reply
    // (context_budget): the server counts the prompt the same way, so a prompt one token over that
    // edge is a 400 before any 200, and one at the edge is answered, its usage counting those tokens.
    void aPromptAtTheWorkersEdgeIsCheckedAsTheWorkerCountsIt() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        // Longer than the model's own: the model's count of a prompt over the worker's edge fits.
        ChatTemplateSetting longer;
        longer.source = QStringLiteral(
            "{% for m in messages %}<|im_start|>{{ m.role }}\nThis message was relayed to you by the WhiteBox "
            "desktop application on behalf of another program that uses its server.\n{{ m.content }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
        longer.origin = QStringLiteral("longer.jinja");
        QSignalSpy changed(ctl, &ChatController::chatTemplateChanged);
        ctl->applyChatTemplate(longer);
        QVERIFY(changed.wait(kTimeoutMs));
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);

        const wb::Model& model = *ctl->worker()->loadedModel();
        const wb::ChatTemplate user = wb::choose_chat_template(model.file(), model.tokenizer(),
                                                               chat_template_setting::toChoice(longer));
        const auto words = [](int n) { return QString("word ").repeated(n).trimmed(); };
        const auto count = [&](const wb::ChatTemplate& t, int n) {
            const ChatMessages m{{"user", words(n).toStdString()}};
            const wb::ChatPrompt prompt =
                wb::build_chat_prompt(t, model.tokenizer(), wb::chat_messages_value(m), wb::jinja::Value::none(), true);
            return int(prompt.ids.size());
        };
        const int n_ctx = ctl->model().contextSize;
        const int edge = n_ctx - context_budget::replyRoom(n_ctx);  // the most prompt tokens the worker takes
        int n = std::max(0, edge - count(user, 0));
        while (n > 0 && count(user, n) > edge) --n;
        while (count(user, n + 1) <= edge) ++n;
        QCOMPARE(count(user, n), edge);
        QCOMPARE(count(user, n + 1), edge + 1);
        QVERIFY2(count(model.chat_template(), n + 1) <= edge,
                 "the model's own template must fit where the user's does not");

        const int before = w.conversationStore()->conversations().size();
        auto over = postAsync(port, "/v1/chat/completions", chatBody(words(n + 1), 1, false));
        const Reply refused = finish(over);
        QCOMPARE(refused.status, 400);
        const QJsonObject error =
            QJsonDocument::fromJson(QByteArray::fromStdString(refused.body)).object()["error"].toObject();
        const QString message = error["message"].toString();
        QCOMPARE(error["code"].toString(), QString("context_length_exceeded"));
        QVERIFY2(message.contains(QString("the prompt is %1 tokens").arg(edge + 1)), refused.body.c_str());
        QVERIFY2(message.contains("kept for the reply"), refused.body.c_str());
        QCOMPARE(w.conversationStore()->conversations().size(), before);  // never became a conversation

        auto at = postAsync(port, "/v1/chat/completions", chatBody(words(n), 1, false));
        const Reply answered = finish(at);
        QCOMPARE(answered.status, 200);
        const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(answered.body)).object();
        QVERIFY2(!o.contains("error"), answered.body.c_str());
        QCOMPARE(o["usage"].toObject()["prompt_tokens"].toInt(), edge);
        ctl->applyChatTemplate({});
        QVERIFY(changed.wait(kTimeoutMs));
    }

    // /props reports the template the worker renders API requests with: the user's replacement, also
    // one applied after serving started, and the model's own again once the replacement is taken back.
    void propsReportsTheTemplateInUse() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        // Answered on the HTTP thread, without the GUI thread.
        const auto propsTemplate = [port] {
            httplib::Client c("127.0.0.1", port);
            const auto r = c.Get("/props");
            if (!r || r->status != 200) return QString("no /props");
            return QJsonDocument::fromJson(QByteArray::fromStdString(r->body)).object()["chat_template"].toString();
        };
        const QString own = QString::fromStdString(ctl->worker()->loadedModel()->chat_template().source());
        QVERIFY(!own.isEmpty());
        QCOMPARE(propsTemplate(), own);

        ChatTemplateSetting user;
        user.source = QStringLiteral("{% for m in messages %}<|im_start|>{{ m.role }} (as the user's template says)\n"
                                     "{{ m.content }}<|im_end|>\n{% endfor %}"
                                     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
        user.origin = QStringLiteral("user.jinja");
        QSignalSpy changed(ctl, &ChatController::chatTemplateChanged);
        ctl->applyChatTemplate(user);
        QVERIFY(changed.wait(kTimeoutMs));
        QCOMPARE(propsTemplate(), user.source);

        ctl->applyChatTemplate({});
        QVERIFY(changed.wait(kTimeoutMs));
        QCOMPARE(propsTemplate(), own);
    }

    // A client that does not read its reply holds an HTTP thread in a write; turning serving off (on
    // the GUI thread) must not wait for it: well under 50 ms, not httplib's 5 s write timeout.
    void stoppingIsNotHeldUpByAClientThatDoesNotRead() {
        MainWindow& w = *m_w;
        ChatController* ctl = w.controller();
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        // A whole reply of 300 tokens with 20 alternatives each (hundreds of KiB) to a small buffer.
        QJsonObject o{{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Count to 500."}}}},
                      {"max_tokens", 300}, {"temperature", 0.0}, {"ignore_eos", true}, {"logprobs", true},
                      {"top_logprobs", 20}};
        const QByteArray body = QJsonDocument(o).toJson(QJsonDocument::Compact);
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        const int rcvbuf = 4096;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(uint16_t(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        const QByteArray request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/json\r\nContent-Length: " +
                                   QByteArray::number(body.size()) + "\r\n\r\n" + body;
        QCOMPARE(::send(fd, request.data(), size_t(request.size()), MSG_NOSIGNAL), ssize_t(request.size()));
        QSignalSpy finished(ctl, &ChatController::generationFinished);
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kTimeoutMs);
        QCOMPARE(finished.last().at(0).value<GenerationSummary>().reason, wb::StopReason::MAX_TOKENS);
        QTest::qWait(300);  // the reply is written: the socket's buffers are full
        QElapsedTimer t;
        t.start();
        w.serveMenu()->toggleAction()->trigger();
        const qint64 ms = t.elapsed();
        QVERIFY(!w.serveController()->isServing());
        // The bug this guards cost 5 s (the write timeout); 1 s keeps a loaded 2-core CI machine green.
        QVERIFY2(ms < 1000, qPrintable(QString("stopping took %1 ms").arg(ms)));
        QVERIFY(portIsFree(port));
        ::close(fd);
    }

    void completionsIsRefusedWithAReason() {
        MainWindow& w = *m_w;
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        auto f = postAsync(port, "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4})");
        const Reply r = finish(f);
        QCOMPARE(r.status, 400);
        QVERIFY2(r.body.find("serves chat completions only") != std::string::npos, r.body.c_str());
        QVERIFY(r.body.find("whitebox-cli serve") != std::string::npos);
    }

    void refusedStartsLeaveTheToggleOffAndNothingSaved() {
        MainWindow& w = *m_w;
        QSettings().remove("serve");
        // A port something else listens on.
        QTcpServer taken;
        QVERIFY(taken.listen(QHostAddress::LocalHost, 0));
        QCOMPARE(serveFrom(w, "127.0.0.1", taken.serverPort()), 0);
        QVERIFY(!w.serveMenu()->toggleAction()->isChecked());
        QVERIFY2(w.serveMenu()->lastError().contains("cannot listen"), qPrintable(w.serveMenu()->lastError()));
        QVERIFY(w.serveMenu()->statusLabel()->isHidden());
        QVERIFY(!QSettings().contains("serve/port"));
        // Every address of the machine without a key.
        QCOMPARE(serveFrom(w, "0.0.0.0", 0), 0);
        QVERIFY(!w.serveMenu()->toggleAction()->isChecked());
        QVERIFY2(w.serveMenu()->lastError().contains("API key"), qPrintable(w.serveMenu()->lastError()));
        QVERIFY(!QSettings().contains("serve/host"));
        // With a key it starts, and then the settings are saved.
        const int port = serveFrom(w, "0.0.0.0", 0, "secret");
        QVERIFY2(port > 0, qPrintable(w.serveMenu()->lastError()));
        QCOMPARE(QSettings().value("serve/host").toString(), QString("0.0.0.0"));
        QCOMPARE(QSettings().value("serve/apiKey").toString(), QString("secret"));
        auto f = postAsync(port, "/v1/chat/completions", chatBody("Hi.", 2, false));
        QCOMPARE(finish(f).status, 401);  // no key sent
    }

    void loadingAModelStopsServingAndStopFreesThePort() {
        MainWindow& w = *m_w;
        int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        QVERIFY(!portIsFree(port));
        w.serveMenu()->toggleAction()->trigger();
        QVERIFY(!w.serveController()->isServing());
        QVERIFY(portIsFree(port));

        port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        QSignalSpy loaded(w.controller(), &ChatController::modelLoaded);
        w.controller()->loadModel(QString::fromStdString(wb::default_model_path()));
        // At once, before the worker replaces the model the server reads.
        QVERIFY(!w.serveController()->isServing());
        QVERIFY(!w.serveMenu()->toggleAction()->isChecked());
        QVERIFY(w.serveMenu()->statusLabel()->isHidden());
        QVERIFY(portIsFree(port));
        QVERIFY(loaded.wait(kTimeoutMs));
        // And it serves the new one when turned on again.
        port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        auto f = postAsync(port, "/v1/chat/completions", chatBody("Name a colour.", 3, false));
        QCOMPARE(finish(f).status, 200);
    }
    // Server settings…: OK keeps the values for the next start and writes nothing; the start writes them.
    void theSettingsDialogFeedsTheNextStart() {
        MainWindow& w = *m_w;
        QSettings().remove("serve");
        w.serveMenu()->settingsAction()->trigger();
        auto* d = w.findChild<QDialog*>("serveSettings");
        QVERIFY(d);
        QTRY_VERIFY(d->isVisible());
        d->findChild<QLineEdit*>("serveHost")->setText(" localhost ");
        d->findChild<QSpinBox*>("servePort")->setValue(0);
        d->findChild<QLineEdit*>("serveKey")->setText("k3y");
        d->accept();
        QCOMPARE(w.serveMenu()->pending().host, QString("localhost"));
        QCOMPARE(w.serveMenu()->pending().apiKey, QString("k3y"));
        QVERIFY(!QSettings().contains("serve/host"));
        w.serveMenu()->toggleAction()->trigger();
        QVERIFY2(w.serveController()->isServing(), qPrintable(w.serveMenu()->lastError()));
        QCOMPARE(QSettings().value("serve/host").toString(), QString("localhost"));
        QCOMPARE(QSettings().value("serve/apiKey").toString(), QString("k3y"));
        QVERIFY(w.serveMenu()->statusLabel()->text().startsWith("Serving on http://localhost:"));
    }

    // Quitting stops serving first: another program's next request cannot hold the window open.
    void closingTheWindowStopsServing() {
        MainWindow& w = *m_w;
        const int port = serveFrom(w, "127.0.0.1", 0);
        QVERIFY(port > 0);
        QVERIFY(w.close());
        QVERIFY(!w.serveController()->isServing());
        QVERIFY(portIsFree(port));
        w.show();
    }

    // Not a check: with WB_SERVE_SCREENSHOTS=DIR set, the pictures of docs/screenshots/serve.png (and
    // the 1366x768 and dark ones looked at beside it) of a streamed request's conversation.

    void screenshotsForTheDocs() {
        const QString dir = qEnvironmentVariable("WB_SERVE_SCREENSHOTS");
        if (dir.isEmpty()) QSKIP("set WB_SERVE_SCREENSHOTS=DIR to write the pictures of the docs");
        MainWindow& w = *m_w;
        w.controller()->newChat();
        const int port = serveFrom(w, "127.0.0.1", portIsFree(8080) ? 8080 : 0);
        QVERIFY(port > 0);
        QJsonObject o{{"messages", QJsonArray{QJsonObject{{"role", "system"}, {"content", "You are a helpful coding assistant."}},
                                              QJsonObject{{"role", "user"}, {"content", "Write a Python function that reverses a string."}}}},
                      {"max_tokens", 90}, {"temperature", 0.0}, {"stream", true}};
        auto f = postAsync(port, "/v1/chat/completions", QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
        QCOMPARE(finish(f).status, 200);
        w.inspectToken(int(w.controller()->conversation().messages.size()) - 1, 4);
        const QList<std::tuple<QSize, ThemeMode, QString>> shots = {
            {QSize(1366, 768), ThemeMode::Light, "serve.png"},
            {QSize(1366, 768), ThemeMode::Dark, "serve-1366-dark.png"},
            {QSize(1920, 1080), ThemeMode::Light, "serve-1920.png"},
            {QSize(1920, 1080), ThemeMode::Dark, "serve-1920-dark.png"}};
        for (const auto& [size, theme, name] : shots) {
            w.setTheme(theme, false);
            w.resize(size);
            QTest::qWait(300);
            QVERIFY(w.grab().save(QDir(dir).filePath(name)));
        }
        w.setTheme(ThemeMode::Light, false);
        w.serveMenu()->settingsAction()->trigger();
        auto* d = w.findChild<QDialog*>("serveSettings");
        QVERIFY(d);
        QTest::qWait(200);
        QVERIFY(d->grab().save(QDir(dir).filePath("serve-settings.png")));
        d->reject();
    }
};

QTEST_MAIN(TestServe)
#include "test_serve.moc"

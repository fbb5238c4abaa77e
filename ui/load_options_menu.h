#pragma once
// The Backend, Context size, Threads and KV cache menus, and the rule that keeps them honest: a choice is
// handed to the controller at once (the loaded model is reloaded with it), but it is ticked for good
// and written to the settings only when a model has loaded with it. When the load fails, the options
// go back to the last ones that worked, the tick follows, the loaded model stays, and the caller is
// told what was kept so it can say why. The Context size menu offers only the sizes the loaded model
// was trained for.
#include <QObject>
#include <QString>

class ChatController;
class QActionGroup;
class QMenu;
class QWidget;
struct ModelSummary;

struct LoadOptions {
    QString backend = QStringLiteral("auto");  // "auto", "cpu", "cuda"
    int contextSize = 0;                       // 0 = the model's default
    int threads = 0;                           // 0 = all cores
    QString cacheTypeK = QStringLiteral("f16");  // KV cache element types (kv_type_name's names)
    QString cacheTypeV = QStringLiteral("f16");
    bool operator==(const LoadOptions& o) const = default;
};

class LoadOptionsMenu : public QObject {
    Q_OBJECT

public:
    // Reads the saved options into the controller; the menus are children of `parent`.
    LoadOptionsMenu(ChatController* controller, QWidget* parent);

    QMenu* backendMenu() const { return m_backendMenu; }
    QMenu* contextMenu() const { return m_contextMenu; }
    QMenu* threadsMenu() const { return m_threadsMenu; }
    QMenu* kvCacheMenu() const { return m_kvMenu; }
    QActionGroup* backendGroup() const { return m_backendGroup; }
    QActionGroup* contextGroup() const { return m_contextGroup; }
    QActionGroup* threadsGroup() const { return m_threadsGroup; }
    QActionGroup* cacheTypeKGroup() const { return m_cacheKGroup; }
    QActionGroup* cacheTypeVGroup() const { return m_cacheVGroup; }
    LoadOptions current() const;
    // The options of the last successful load (the defaults before the first).
    LoadOptions working() const { return m_working; }
    // Why a saved option was not used at start-up (an unknown backend name), or empty.
    QString savedProblem() const { return m_savedProblem; }

    // Call when a load failed. If the options differ from the working ones they are put back (and,
    // when the failed file is not the loaded model, that file is loaded again with them); returns a
    // sentence saying what was kept, or an empty string when the options were not the cause.
    QString revertAfterFailure(const QString& path);

public Q_SLOTS:
    void handleModelLoaded(const ModelSummary& summary);

private:
    void buildMenus(QWidget* parent);
    void apply(const LoadOptions& options);
    void tick(const LoadOptions& options);
    void choose();
    // The options of `options` that differ from `other`, in words.
    static QString describe(const LoadOptions& options, const LoadOptions& other);

    ChatController* m_controller;
    QMenu* m_backendMenu = nullptr;
    QMenu* m_contextMenu = nullptr;
    QMenu* m_threadsMenu = nullptr;
    QMenu* m_kvMenu = nullptr;
    QActionGroup* m_backendGroup = nullptr;
    QActionGroup* m_contextGroup = nullptr;
    QActionGroup* m_threadsGroup = nullptr;
    QActionGroup* m_cacheKGroup = nullptr;
    QActionGroup* m_cacheVGroup = nullptr;
    LoadOptions m_working;
    QString m_savedProblem;
};

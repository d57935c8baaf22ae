"""The parents' console as a parent sees it, in Debian's headless Chromium
driven by selenium (no browser download): tests/host/console.

    driver = chromium()                 # one per test module: it is slow to start
    page = Page(driver, "http://127.0.0.1:8003")
    page.enter("now")                   # logged in (TOKEN), the Now page loaded
    page.text("#now-result", "Done")    # waits until the element shows the words
"""
import base64
import os
import shutil

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

TOKEN = "parent-console-secret"
DEVICE_TOKEN = "device-shared-secret"
WAIT_S = 60     # a ceiling for a busy machine; every wait ends as soon as the page shows it


class NoChromium(Exception):
    pass


def chromium(width=1100, height=1000, lang="en-US"):
    """A headless Chromium from Debian's packages (chromium, chromium-driver),
    preferring the language `lang` (zh-CN: the console speaks Chinese)."""
    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        raise NoChromium("Debian's chromium and chromium-driver are needed "
                         "(tools/apt-packages.txt; make setup installs them)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=%d,%d" % (width, height), "--lang=" + lang, "--no-first-run", "--disable-extensions",
                "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.add_experimental_option("prefs", {"intl.accept_languages": lang})
    opts.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})    # script errors, for script_errors()
    offline = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"      # selenium must never fetch a browser or a driver
    try:
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    finally:
        if offline is None:
            del os.environ["SE_OFFLINE"]
        else:
            os.environ["SE_OFFLINE"] = offline
    driver.set_script_timeout(WAIT_S)
    return driver


class Page:
    """The console as a parent sees it."""

    def __init__(self, driver, base):
        self.driver = driver
        self.base = base

    def open(self, page=""):
        """Load the console afresh (the same address again is only a jump within the page: reload it)."""
        url = self.base + "/console/" + ("#" + page if page else "")
        if self.driver.current_url == url:
            self.driver.refresh()
        else:
            self.driver.get(url)

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def wait(self, condition, what):
        try:
            # A page that renders again replaces its elements: look again.
            return WebDriverWait(self.driver, WAIT_S, ignored_exceptions=[StaleElementReferenceException]) \
                .until(condition)
        except TimeoutException:
            raise AssertionError("the page did not show %s within %d s; it shows:\n%s"
                                 % (what, WAIT_S, self.driver.find_element(By.TAG_NAME, "body").text)) from None

    def visible(self, css):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), css)

    def text(self, css, words):
        """Wait until the element shows `words`; its whole text."""
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), words), "%r in %s" % (words, css))
        return self.find(css).text

    def login(self, token=TOKEN):
        self.open()
        field = self.visible("#token")
        field.clear()
        field.send_keys(token, Keys.ENTER)

    def enter(self, page="devices"):
        """The console open on `page`, logging in first if the browser has no session."""
        self.open(page)
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-view") != "loading", "the page")
        if self.find("body").get_attribute("data-view") == "login":
            self.fill("#token", TOKEN).send_keys(Keys.ENTER)
        return self.visible("#page-%s[data-ready]" % page)

    def go(self, page):
        """Open a page from the menu and wait until it has loaded."""
        self.find('nav a[data-page="%s"]' % page).click()
        return self.visible("#page-%s[data-ready]" % page)

    def fill(self, css, text):
        el = self.find(css)
        el.clear()
        el.send_keys(text)
        return el

    def script_errors(self):
        """Errors the page's scripts raised since the last call (a failed
        request is the API's answer, read by the page: not counted)."""
        return [e["message"] for e in self.driver.get_log("browser")
                if "Failed to load resource" not in e["message"]]

    def screenshot(self, name):
        """docs/console/NAME.png, the whole page (up to 2 400 px tall), when
        XIAOZHI_SCREENSHOTS names that folder (docs/console.md)."""
        folder = os.environ.get("XIAOZHI_SCREENSHOTS")
        if not folder:
            return
        os.makedirs(folder, exist_ok=True)
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 2400), "scale": 1}
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot",
                                           {"format": "png", "captureBeyondViewport": True, "clip": clip})
        with open(os.path.join(folder, name + ".png"), "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def fetch(self, method, path, body=None, headers=None):
        """A request made by script in the page (the browser adds the cookie):
        (status, JSON body or None)."""
        return self.driver.execute_async_script("""
            const [method, path, body, headers, done] = arguments;
            fetch(path, {method, credentials: "same-origin", headers: headers || {},
                         body: body === null ? undefined : JSON.stringify(body)})
              .then(async r => { const t = await r.text(); let j = null; try { j = JSON.parse(t); } catch (e) {}
                                 done([r.status, j]); })
              .catch(e => done([0, String(e)]));""", method, path, body, headers or {})
